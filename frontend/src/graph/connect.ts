/** Whether a new edge may be drawn, and if not, a reason a person can read. */
import { hasTargetHandle, sourceHandleIds } from './handles';
import type { EditorEdge, EditorNode } from './model';

export type ConnectionAttempt = {
  source: string | null;
  target: string | null;
  sourceHandle?: string | null;
};

export type ConnectionCheck = { ok: true } | { ok: false; reason: string };

type Adjacency = Map<string, string[]>;

function adjacency(edges: readonly EditorEdge[]): Adjacency {
  const out: Adjacency = new Map();
  for (const e of edges) {
    const list = out.get(e.source);
    if (list) list.push(e.target);
    else out.set(e.source, [e.target]);
  }
  return out;
}

/** A path `from` → … → `to` along existing edges (node ids, both ends included), or null. */
export function findPath(edges: readonly EditorEdge[], from: string, to: string): string[] | null {
  const next = adjacency(edges);
  const parent = new Map<string, string>();
  const seen = new Set<string>([from]);
  const queue = [from];
  while (queue.length > 0) {
    const current = queue.shift() as string;
    if (current === to) {
      const path = [to];
      let step = to;
      while (step !== from) {
        step = parent.get(step) as string;
        path.unshift(step);
      }
      return path;
    }
    for (const n of next.get(current) ?? []) {
      if (!seen.has(n)) {
        seen.add(n);
        parent.set(n, current);
        queue.push(n);
      }
    }
  }
  return null;
}

export function checkConnection(
  nodes: readonly EditorNode[],
  edges: readonly EditorEdge[],
  attempt: ConnectionAttempt,
): ConnectionCheck {
  const { source, target } = attempt;
  const handle = attempt.sourceHandle ?? null;
  const from = nodes.find((n) => n.id === source);
  const to = nodes.find((n) => n.id === target);
  if (!from || !to) return { ok: false, reason: 'Both ends must be nodes on the canvas' };
  if (from.id === to.id) return { ok: false, reason: `A node cannot connect to itself (${from.id} → ${from.id})` };
  const handles = sourceHandleIds(from);
  if (handles.length === 0) return { ok: false, reason: `An ${from.type} node has no outputs` };
  if (handle === null || !handles.includes(handle)) {
    return { ok: false, reason: `A ${from.type} node has no output “${handle ?? ''}” (it has ${handles.join(', ')})` };
  }
  if (!hasTargetHandle(to.type)) return { ok: false, reason: 'Nothing may lead into the start node' };
  if (edges.some((e) => e.source === from.id && e.target === to.id && (e.sourceHandle ?? null) === handle)) {
    return { ok: false, reason: `${from.id} (${handle}) is already connected to ${to.id}` };
  }
  const back = findPath(edges, to.id, from.id);
  if (back) {
    const cycle = [...back, to.id].join(' → ');
    return { ok: false, reason: `This would close a cycle: ${cycle}` };
  }
  return { ok: true };
}

/** Every node reachable upstream of `nodeId` (not including it), nearest first. */
export function ancestors(edges: readonly EditorEdge[], nodeId: string): string[] {
  const incoming = new Map<string, string[]>();
  for (const e of edges) {
    const list = incoming.get(e.target);
    if (list) list.push(e.source);
    else incoming.set(e.target, [e.source]);
  }
  const seen = new Set<string>();
  const order: string[] = [];
  const queue = [nodeId];
  while (queue.length > 0) {
    const current = queue.shift() as string;
    for (const parent of incoming.get(current) ?? []) {
      if (!seen.has(parent) && parent !== nodeId) {
        seen.add(parent);
        order.push(parent);
        queue.push(parent);
      }
    }
  }
  return order;
}

/** Every node reachable downstream of `nodeId` (not including it). */
export function descendants(edges: readonly EditorEdge[], nodeId: string): string[] {
  const next = adjacency(edges);
  const seen = new Set<string>();
  const queue = [nodeId];
  while (queue.length > 0) {
    const current = queue.shift() as string;
    for (const child of next.get(current) ?? []) {
      if (!seen.has(child) && child !== nodeId) {
        seen.add(child);
        queue.push(child);
      }
    }
  }
  return [...seen];
}
