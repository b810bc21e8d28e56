/**
 * The node picker that opens where a connection was dropped on empty canvas, or from an edge's "+":
 * the palette's search (type to filter, ↑/↓, Enter, Escape), offering only the types that can be wired
 * there. The chosen node is placed and connected in one undo step (editorStore.insertNode).
 */
import { useReactFlow, type FinalConnectionState } from '@xyflow/react';
import { useCallback, useEffect, useLayoutEffect, useRef, useState, type CSSProperties, type KeyboardEvent } from 'react';

import { NODE_TYPE_INFO, type EditorEdge, type EditorNode, type NodeType } from '../../graph/model';
import { linkableTypes, type NodeLink } from '../../graph/wiring';
import { placePopup } from '../../shared/ui/popupPlacement';
import { toast } from '../../shared/toasts';
import { useTypeSearch } from '../palette/useTypeSearch';
import { useEditorStoreApi } from '../storeContext';

const OPEN_EVENT = 'flowdeck:open-node-picker';

/** Where the picker opens (viewport coordinates) and how the chosen node is wired. */
export type PickerRequest = { clientX: number; clientY: number; link: NodeLink };

export function openNodePicker(request: PickerRequest): void {
  window.dispatchEvent(new CustomEvent<PickerRequest>(OPEN_EVENT, { detail: request }));
}

/** After a connection was dropped on the pane: open the picker there, wired to the handle it came from. */
export function openPickerAtDrop(event: MouseEvent | TouchEvent, state: FinalConnectionState): void {
  const target = event.target instanceof Element ? event.target : null;
  if (!target?.closest('.react-flow__pane') || !state.fromNode || !state.fromHandle) return;
  const point = 'changedTouches' in event ? event.changedTouches[0] : event;
  if (!point) return;
  const { fromNode, fromHandle } = state;
  const link: NodeLink =
    fromHandle.type === 'source' ? { kind: 'from', source: fromNode.id, sourceHandle: fromHandle.id ?? 'default' } : { kind: 'to', target: fromNode.id };
  openNodePicker({ clientX: point.clientX, clientY: point.clientY, link });
}

/** Where the new node's top-left goes so that its wired side sits at the drop point (flow coordinates). */
function nodeSpot(link: NodeLink, at: { x: number; y: number }): { x: number; y: number } {
  return link.kind === 'to' ? { x: at.x - 230, y: at.y - 30 } : { x: at.x + 10, y: at.y - 30 };
}

export function NodePickerHost() {
  const [request, setRequest] = useState<PickerRequest | null>(null);
  useEffect(() => {
    const open = (e: Event) => setRequest((e as CustomEvent<PickerRequest>).detail);
    window.addEventListener(OPEN_EVENT, open);
    return () => window.removeEventListener(OPEN_EVENT, open);
  }, []);
  const close = useCallback(() => setRequest(null), []);
  return request ? <NodePicker key={`${request.clientX},${request.clientY}`} request={request} onClose={close} /> : null;
}

function NodePicker({ request, onClose }: { request: PickerRequest; onClose: () => void }) {
  const store = useEditorStoreApi();
  const { screenToFlowPosition } = useReactFlow<EditorNode, EditorEdge>();
  const allowed = new Set(linkableTypes(request.link, store.getState().nodes));
  const { query, types, current, setActive, listId, optionId, onNavigate, inputProps } = useTypeSearch((t) => allowed.has(t));
  const [style, setStyle] = useState<CSSProperties>({ left: request.clientX, top: request.clientY, visibility: 'hidden' });
  const box = useRef<HTMLDivElement>(null);
  const search = useRef<HTMLInputElement>(null);

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const at = { left: request.clientX, right: request.clientX, top: request.clientY, bottom: request.clientY };
    const size = { width: el.offsetWidth, height: el.offsetHeight }; // at most the stylesheet's max-height
    const p = placePopup(at, size, { width: window.innerWidth, height: window.innerHeight });
    setStyle({ left: p.left, top: p.top, maxHeight: Math.min(p.maxHeight, size.height) });
  }, [request]);

  // Focus once the click that ends the drag has landed (it would take the focus back to the pane).
  useEffect(() => {
    const frame = requestAnimationFrame(() => search.current?.focus());
    return () => cancelAnimationFrame(frame);
  }, []);

  useEffect(() => {
    const outside = (e: MouseEvent) => {
      if (box.current && !box.current.contains(e.target as Node)) onClose();
    };
    document.addEventListener('mousedown', outside, true);
    return () => document.removeEventListener('mousedown', outside, true);
  }, [onClose]);

  const pick = (type: NodeType) => {
    const at = screenToFlowPosition({ x: request.clientX, y: request.clientY });
    const result = store.getState().insertNode(type, nodeSpot(request.link, at), request.link);
    if (!result.ok) toast('error', result.reason);
    onClose();
  };

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (onNavigate(e, pick)) return;
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      onClose();
    }
  };

  return (
    <div ref={box} className="node-picker" style={style} role="dialog" aria-label="Add a node" data-testid="node-picker">
      <input
        className="input"
        ref={search}
        type="search"
        placeholder="Search nodes…"
        aria-label="Search nodes to add"
        {...inputProps}
        data-testid="node-picker-search"
        onKeyDown={onKeyDown}
      />
      <div role="listbox" id={listId} aria-label="Node types" className="node-picker__list">
        {types.length === 0 && <div className="muted small">No node fits here matching “{query}”.</div>}
        {types.map((type, i) => {
          const info = NODE_TYPE_INFO[type];
          return (
            <button
              key={type}
              id={optionId(type)}
              type="button"
              role="option"
              tabIndex={-1}
              aria-selected={i === current}
              className={`node-picker__item${i === current ? ' is-active' : ''}`}
              style={{ ['--accent' as string]: info.color }}
              data-testid={`node-picker-${type}`}
              onMouseEnter={() => setActive(i)}
              onClick={() => pick(type)}
            >
              <span className="palette__icon">{info.icon}</span>
              <span className="node-picker__title">{info.title}</span>
            </button>
          );
        })}
      </div>
    </div>
  );
}
