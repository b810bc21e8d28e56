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
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: 'LR', nodesep: 40, ranksep: 90, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) {
    g.setNode(node.id, { width: node.measured?.width ?? NODE_WIDTH, height: estimatedHeight(node) });
  }
  for (const edge of edges) {
    if (g.hasNode(edge.source) && g.hasNode(edge.target)) g.setEdge(edge.source, edge.target, {}, edge.id);
  }
  dagre.layout(g);
  const positions = new Map<string, { x: number; y: number }>();
  for (const node of nodes) {
    const laid = g.node(node.id);
    const width = node.measured?.width ?? NODE_WIDTH;
    positions.set(node.id, { x: Math.round(laid.x - width / 2), y: Math.round(laid.y - estimatedHeight(node) / 2) });
  }
  return positions;
}
