/**
 * Wiring a node that is being added (n8n's "drop a connection on the canvas" and "+ on an edge"): which
 * types may be placed, and the edges the new node gets. Every edge is checked by checkConnection. Pure.
 */
import { checkConnection, descendants } from './connect';
import { sourceHandleIds, TARGET_HANDLE } from './handles';
import { newEdgeId } from './ids';
import { NODE_WIDTH } from './layout';
import { GAP_X } from './placement';
import { NODE_HANDLES } from '../generated/nodeTypes';
import { PALETTE_ORDER, type EditorEdge, type EditorNode, type NodeType } from './model';

/** How a new node joins the graph: after an output handle, before a node's input, or into an edge. */
export type NodeLink =
  | { kind: 'from'; source: string; sourceHandle: string }
  | { kind: 'to'; target: string }
  | { kind: 'split'; edgeId: string };

export type Wired = { ok: true; edges: EditorEdge[] } | { ok: false; reason: string };

function hasOutputs(type: NodeType): boolean {
  return NODE_HANDLES[type].length > 0;
}

/** The node types the picker offers for `link` (a new node after a handle needs an input, and so on). */
export function linkableTypes(link: NodeLink, nodes: readonly EditorNode[]): NodeType[] {
  const hasStart = nodes.some((n) => n.type === 'start');
  return PALETTE_ORDER.filter((type) => {
    if (link.kind === 'from') return type !== 'start';
    if (link.kind === 'to') return hasOutputs(type) && !(type === 'start' && hasStart);
    return type !== 'start' && hasOutputs(type);
  });
}

/** The handle a node inserted into an edge continues by: a loop's `done` (not its body), else its first. */
export function continuationHandle(node: EditorNode): string | undefined {
  const handles = sourceHandleIds(node);
  return node.type === 'loop' ? 'done' : handles[0];
}

/**
 * Room for a node inserted into `edge`, as n8n makes it: the new node goes right of the edge's source, and
 * the edge's target with everything downstream of it moves right when it would overlap. Returns the new
 * node's position and the nodes (moved or not).
 */
export function makeRoom(
  nodes: readonly EditorNode[],
  edges: readonly EditorEdge[],
  edge: EditorEdge,
): { position: { x: number; y: number }; nodes: EditorNode[] } {
  const source = nodes.find((n) => n.id === edge.source);
  const target = nodes.find((n) => n.id === edge.target);
  if (!source || !target) return { position: { x: 0, y: 0 }, nodes: [...nodes] };
  const position = { x: Math.round(source.position.x + (source.measured?.width ?? NODE_WIDTH) + GAP_X), y: Math.round(source.position.y) };
  const shift = position.x + NODE_WIDTH + GAP_X - target.position.x;
  if (shift <= 0) return { position, nodes: [...nodes] };
  const moving = new Set([target.id, ...descendants(edges, target.id)]);
  return {
    position,
    nodes: nodes.map((n) => (moving.has(n.id) ? { ...n, position: { x: n.position.x + shift, y: n.position.y } } : n)),
  };
}

/**
 * The edges after `node` (new, not yet in `nodes`) is wired by `link`. Splitting an edge keeps the
 * source's handle (a condition's `true` edge stays `true`) and leaves the new node by its first output.
 */
export function wireNewNode(nodes: readonly EditorNode[], edges: readonly EditorEdge[], node: EditorNode, link: NodeLink): Wired {
  const all = [...nodes, node];
  const taken = new Set(edges.map((e) => e.id));
  const add = (current: EditorEdge[], source: string, sourceHandle: string, target: string): Wired => {
    const check = checkConnection(all, current, { source, target, sourceHandle });
    if (!check.ok) return check;
    const id = newEdgeId(taken);
    taken.add(id);
    return { ok: true, edges: [...current, { id, source, target, sourceHandle, targetHandle: TARGET_HANDLE }] };
  };
  const firstOutput = continuationHandle(node);
  if (link.kind === 'from') return add([...edges], link.source, link.sourceHandle, node.id);
  if (firstOutput === undefined) return { ok: false, reason: `A ${node.type} node has no outputs` };
  if (link.kind === 'to') return add([...edges], node.id, firstOutput, link.target);
  const split = edges.find((e) => e.id === link.edgeId);
  if (!split) return { ok: false, reason: 'That connection is no longer on the canvas' };
  const rest = edges.filter((e) => e.id !== split.id);
  const first = add(rest, split.source, split.sourceHandle ?? 'default', node.id);
  return first.ok ? add(first.edges, node.id, firstOutput, split.target) : first;
}
