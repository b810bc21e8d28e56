/**
 * Where a node added by click lands: to the right of the selected node, wired to its first free output
 * handle; with nothing selected, at the first free spot from a point (the middle of the view), never on
 * top of another node. Pure.
 */
import { checkConnection } from './connect';
import { sourceHandleIds } from './handles';
import { estimatedHeight, NODE_WIDTH } from './layout';
import { createNode, type EditorEdge, type EditorNode, type NodeType } from './model';

export const GAP_X = 80;
export const GAP_Y = 30;
const MARGIN = 16;
/** A node just added, not wired yet, shows why under its card (up to two lines) once the validation
 * answers: placement counts that in, measured or not (a card measured before the answer came is that much
 * shorter than it will be), so nodes added in quick succession never overlap. */
const UNWIRED_NOTE = 54;

type Box = { x: number; y: number; width: number; height: number };

function boxOf(node: EditorNode): Box {
  const height = Math.max(node.measured?.height ?? 0, estimatedHeight(node) + UNWIRED_NOTE);
  return { x: node.position.x, y: node.position.y, width: node.measured?.width ?? NODE_WIDTH, height };
}

function overlaps(a: Box, b: Box, margin = MARGIN): boolean {
  return a.x < b.x + b.width + margin && b.x < a.x + a.width + margin && a.y < b.y + b.height + margin && b.y < a.y + a.height + margin;
}

/**
 * The first spot at or below `from` (stepping down, then a column right) where a new node `height` tall
 * overlaps nothing.
 */
export function freeSpot(nodes: readonly EditorNode[], from: { x: number; y: number }, height = 94): { x: number; y: number } {
  const boxes = nodes.map(boxOf);
  for (let column = 0; column < 20; column++) {
    for (let row = 0; row < 30; row++) {
      const spot = { x: Math.round(from.x + column * (NODE_WIDTH + GAP_X)), y: Math.round(from.y + row * (height / 2 + GAP_Y / 2)) };
      const box = { ...spot, width: NODE_WIDTH, height };
      if (!boxes.some((b) => overlaps(box, b))) return spot;
    }
  }
  return { x: Math.round(from.x), y: Math.round(from.y) };
}

/** The first output handle of `node` no edge leaves from (in the order the card shows them), if any. */
export function firstFreeHandle(node: EditorNode, edges: readonly EditorEdge[]): string | null {
  const used = new Set(edges.filter((e) => e.source === node.id).map((e) => e.sourceHandle ?? 'default'));
  return sourceHandleIds(node).find((h) => !used.has(h)) ?? null;
}

export type Placement = { position: { x: number; y: number }; connectFrom: { source: string; sourceHandle: string } | null };

/**
 * Where a new node of `type` goes. `selected` is the node to continue from (or null); `fallback` is the
 * point to start from when nothing is selected (the middle of the view, in flow coordinates).
 */
export function placeNewNode(
  nodes: readonly EditorNode[],
  edges: readonly EditorEdge[],
  type: NodeType,
  selected: EditorNode | null,
  fallback: { x: number; y: number },
): Placement {
  const height = estimatedHeight(createNode(type, '__new__', fallback)) + UNWIRED_NOTE;
  if (!selected) return { position: freeSpot(nodes, { x: fallback.x - NODE_WIDTH / 2, y: fallback.y - height / 2 }, height), connectFrom: null };
  const box = boxOf(selected);
  const position = freeSpot(nodes, { x: box.x + box.width + GAP_X, y: box.y }, height);
  const handle = firstFreeHandle(selected, edges);
  if (handle === null || type === 'start') return { position, connectFrom: null };
  // The new node has no edges yet, so only the handle and the target's type can refuse.
  const check = checkConnection(
    [...nodes, { id: '__new__', type, position, data: { label: '', config: {} } } as unknown as EditorNode],
    edges,
    { source: selected.id, target: '__new__', sourceHandle: handle },
  );
  return { position, connectFrom: check.ok ? { source: selected.id, sourceHandle: handle } : null };
}
