/** Auto-layout with dagre (layered, left to right): returns new positions, touches nothing else. */
import dagre from '@dagrejs/dagre';

import { sourceHandles } from './handles';
import type { EditorEdge, EditorNode } from './model';

export const NODE_WIDTH = 220;
const BASE_HEIGHT = 72;
const HANDLE_ROW = 22;

export function estimatedHeight(node: EditorNode): number {
  return node.measured?.height ?? BASE_HEIGHT + Math.max(0, sourceHandles(node).length - 1) * HANDLE_ROW;
}

export function autoLayout(
  nodes: readonly EditorNode[],
  edges: readonly EditorEdge[],
): Map<string, { x: number; y: number }> {
  // dagre keeps nodes in plain objects: give it index keys, never the ids (`constructor` is a valid id).
  const key = new Map(nodes.map((n, i) => [n.id, `n${i}`]));
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'LR', nodesep: 40, ranksep: 90, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) {
    g.setNode(key.get(node.id) as string, { width: node.measured?.width ?? NODE_WIDTH, height: estimatedHeight(node) });
  }
  for (const [i, edge] of edges.entries()) {
    const source = key.get(edge.source);
    const target = key.get(edge.target);
    if (source && target) g.setEdge(source, target, {}, `e${i}`);
  }
  dagre.layout(g);
  const positions = new Map<string, { x: number; y: number }>();
  for (const node of nodes) {
    const laid = g.node(key.get(node.id) as string);
    const width = node.measured?.width ?? NODE_WIDTH;
    positions.set(node.id, { x: Math.round(laid.x - width / 2), y: Math.round(laid.y - estimatedHeight(node) / 2) });
  }
  return positions;
}
