/** Which edges a run took: derived from the node statuses and outputs (SPEC §2 "Edges, skipping"). */
import { TERMINAL_NODE_STATUSES, type NodeStatus } from '../generated/statuses';
import type { EditorEdge, EditorNode } from './model';

export type EdgeRunState = 'idle' | 'taken' | 'not-taken';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The handle a COMPLETED node left by, as its output shows it. */
export function takenHandle(node: EditorNode, output: unknown): string | null {
  switch (node.type) {
    case 'start':
    case 'delay':
      return 'default';
    case 'end':
      return null;
    case 'python':
    case 'dataQuery':
    case 'http':
    case 'workflow':
      return isRecord(output) && isRecord(output.error) && 'message' in output.error ? 'error' : 'success';
    case 'condition':
      return isRecord(output) && typeof output.branch === 'string' ? output.branch : null;
    case 'loop':
      return 'done';
    case 'wait':
      return isRecord(output) && output.timedOut === true ? 'timeout' : 'success';
    case 'switch':
      return isRecord(output) && typeof output.handle === 'string' ? output.handle : null;
    case 'set':
      return 'success';
  }
}

export type NodeRunView = { status: NodeStatus; output?: unknown };

export function edgeRunState(
  edge: EditorEdge,
  source: EditorNode | undefined,
  view: NodeRunView | undefined,
): EdgeRunState {
  if (!source || !view || !TERMINAL_NODE_STATUSES.has(view.status)) return 'idle';
  if (view.status !== 'COMPLETED') return 'not-taken';
  if (source.type === 'loop' && edge.sourceHandle === 'loop') {
    const count = isRecord(view.output) ? view.output.count : undefined;
    return typeof count === 'number' && count > 0 ? 'taken' : 'not-taken';
  }
  return takenHandle(source, view.output) === (edge.sourceHandle ?? 'default') ? 'taken' : 'not-taken';
}
