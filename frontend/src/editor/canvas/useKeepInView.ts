/**
 * Panels never cover the work: when the canvas shrinks (the node panel, settings or the bottom panel opened)
 * or another node is opened in the node panel, pan so the inspected (or selected) node and the running nodes
 * are in sight and under neither the minimap nor the zoom controls.
 */
import { useReactFlow } from '@xyflow/react';
import { useCallback, useEffect, type RefObject } from 'react';

import type { EditorEdge, EditorNode } from '../../graph/model';
import { displayStatus } from '../../runs/runReducer';
import { useEditor, useEditorStoreApi } from '../storeContext';
import { revealShift, union, type Rect } from './viewport';

const COVERS = '.react-flow__minimap, .react-flow__controls';
/** A click on a node opens the node panel: panning at once would move the node from under a double click's
 * second click (which opens its details), so a pan waits until a double click would be over. */
const DOUBLE_CLICK_MS = 450;

function shown(el: Element): Rect | null {
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 ? { left: r.left, top: r.top, right: r.right, bottom: r.bottom } : null;
}

export function useKeepInView(canvas: RefObject<HTMLDivElement | null>): void {
  const store = useEditorStoreApi();
  const flow = useReactFlow<EditorNode, EditorEdge>();

  const rectOf = useCallback(
    (id: string): Rect | null => {
      const node = flow.getInternalNode(id);
      if (!node) return null;
      const { x, y } = node.internals.positionAbsolute;
      const a = flow.flowToScreenPosition({ x, y });
      const b = flow.flowToScreenPosition({ x: x + (node.measured.width ?? 220), y: y + (node.measured.height ?? 70) });
      return { left: a.x, top: a.y, right: b.x, bottom: b.y };
    },
    [flow],
  );

  const reveal = useCallback(
    (el: HTMLElement | null) => {
      const area = el ? shown(el) : null;
      if (!el || !area) return;
      const s = store.getState();
      const focus = s.inspectorNodeId ? [s.inspectorNodeId] : s.nodes.filter((n) => n.selected).map((n) => n.id);
      const running = s.run ? s.nodes.filter((n) => displayStatus(s.run?.nodes[n.id]) === 'RUNNING').map((n) => n.id) : [];
      const focusRect = union(focus.map(rectOf).filter((r): r is Rect => r !== null));
      const allRect = union([...focus, ...running].map(rectOf).filter((r): r is Rect => r !== null));
      const fits = (r: Rect | null) => r !== null && r.right - r.left < area.right - area.left - 48 && r.bottom - r.top < area.bottom - area.top - 48;
      const target = fits(allRect) ? allRect : focusRect;
      if (!target) return;
      const covers = [...el.querySelectorAll(COVERS)].map(shown).filter((r): r is Rect => r !== null);
      const shift = revealShift(target, area, covers);
      if (shift.x === 0 && shift.y === 0) return;
      const viewport = flow.getViewport();
      void flow.setViewport({ x: viewport.x + shift.x, y: viewport.y + shift.y, zoom: viewport.zoom }, { duration: 200 });
    },
    [store, flow, rectOf],
  );

  // The canvas got smaller: a panel opened beside or below it.
  useEffect(() => {
    const el = canvas.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    let size = { width: el.clientWidth, height: el.clientHeight };
    let timer = 0;
    let pressed = -Infinity;
    const onPointerDown = () => {
      pressed = performance.now();
    };
    const observer = new ResizeObserver(() => {
      const next = { width: el.clientWidth, height: el.clientHeight };
      const shrank = next.width < size.width || next.height < size.height;
      size = next;
      if (!shrank) return;
      window.clearTimeout(timer);
      timer = window.setTimeout(() => reveal(el), Math.max(0, pressed + DOUBLE_CLICK_MS - performance.now()));
    });
    el.addEventListener('pointerdown', onPointerDown, true);
    observer.observe(el);
    return () => {
      observer.disconnect();
      el.removeEventListener('pointerdown', onPointerDown, true);
      window.clearTimeout(timer);
    };
  }, [canvas, reveal]);

  // Another node opened in the node panel (from the run table, the problems list, the keyboard).
  const inspected = useEditor((s) => s.inspectorNodeId);
  useEffect(() => {
    if (!inspected) return;
    const el = canvas.current;
    const timer = window.setTimeout(() => reveal(el), DOUBLE_CLICK_MS);
    return () => window.clearTimeout(timer);
  }, [inspected, reveal, canvas]);
}
