/** Canvas actions the toolbar, the palette and the shortcuts share: add a node or a note, auto-layout. */
import { useReactFlow } from '@xyflow/react';
import { useCallback, useMemo } from 'react';

import type { EditorEdge, EditorNode, NodeType } from '../../graph/model';
import { errorMessage, toast } from '../../shared/toasts';
import { useEditorStoreApi } from '../storeContext';
import { FIT_PADDING } from './viewport';

export function useEditorActions() {
  const store = useEditorStoreApi();
  const flow = useReactFlow<EditorNode, EditorEdge>();

  /** The middle of the visible canvas, in flow coordinates. */
  const viewCenter = useCallback(() => {
    const canvas = document.querySelector('[data-testid="canvas"]')?.getBoundingClientRect();
    return canvas ? flow.screenToFlowPosition({ x: canvas.left + canvas.width / 2, y: canvas.top + canvas.height / 2 }) : { x: 0, y: 0 };
  }, [flow]);

  const addNode = useCallback(
    (type: NodeType) => {
      const id = store.getState().addNodeNext(type, viewCenter());
      // Keep the new node in view: it may land right of (or below) the visible area.
      window.requestAnimationFrame(() => {
        const node = flow.getNode(id);
        const canvas = document.querySelector('[data-testid="canvas"]')?.getBoundingClientRect();
        if (!node || !canvas) return;
        const corner = flow.flowToScreenPosition({ x: node.position.x + 240, y: node.position.y + 100 });
        const origin = flow.flowToScreenPosition(node.position);
        const visible = origin.x >= canvas.left && origin.y >= canvas.top && corner.x <= canvas.right && corner.y <= canvas.bottom;
        if (!visible) void flow.setCenter(node.position.x + 110, node.position.y + 40, { zoom: flow.getZoom(), duration: 150 });
      });
    },
    [store, flow, viewCenter],
  );

  const addNote = useCallback(() => {
    const c = viewCenter();
    store.getState().addNote({ x: Math.round(c.x - 110), y: Math.round(c.y - 70) });
  }, [store, viewCenter]);

  const layout = useCallback(() => {
    store
      .getState()
      .layout()
      .then(() => window.setTimeout(() => void flow.fitView({ padding: FIT_PADDING, duration: 200 }), 30))
      .catch((err: unknown) => toast('error', `Auto-layout failed: ${errorMessage(err)}`));
  }, [store, flow]);

  return useMemo(() => ({ addNode, addNote, layout, viewCenter }), [addNode, addNote, layout, viewCenter]);
}
