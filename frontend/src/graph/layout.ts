/** The sizes layout and placement assume for a node React Flow has not measured yet. */
import { sourceHandles } from './handles';
import type { EditorNode } from './model';

export const NODE_WIDTH = 220;
const BASE_HEIGHT = 72;
const HANDLE_ROW = 22;

export function estimatedHeight(node: EditorNode): number {
  return node.measured?.height ?? BASE_HEIGHT + Math.max(0, sourceHandles(node).length - 1) * HANDLE_ROW;
}
