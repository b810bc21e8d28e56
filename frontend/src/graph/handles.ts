/** The output handles each node type really has (SPEC §2), and whether it takes input. */
import { NODE_HANDLES } from '../generated/nodeTypes';
import type { EditorNode, NodeType } from './model';

export type HandleTone = 'default' | 'success' | 'error' | 'branch' | 'else' | 'loop' | 'done';
export type HandleSpec = { id: string; label: string; tone: HandleTone };

/** The id of the single input handle every node but `start` has. */
export const TARGET_HANDLE = 'in';

// Every node type of the editor has its handles from the backend's handler (generated), and no other.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameTypes: Same<keyof typeof NODE_HANDLES, NodeType> = true;
void sameTypes;

const TONES: Record<string, HandleTone> = { success: 'success', error: 'error', else: 'else', loop: 'loop', done: 'done' };

function fixedHandles(type: NodeType): HandleSpec[] {
  return NODE_HANDLES[type].map((id) => ({ id, label: id === 'default' ? '' : id, tone: TONES[id] ?? 'default' }));
}

export function sourceHandles(node: EditorNode): HandleSpec[] {
  if (node.type === 'condition') {
    const branches = node.data.config.branches.map((b): HandleSpec => ({ id: b.id, label: b.label || b.id, tone: 'branch' }));
    return [...branches, ...fixedHandles('condition')];
  }
  if (node.type === 'switch') {
    const cases = node.data.config.cases.map((c): HandleSpec => ({ id: c.handle, label: c.handle, tone: 'branch' }));
    return [...cases, ...fixedHandles('switch').map((h) => ({ ...h, label: 'default', tone: 'else' as const }))];
  }
  if (node.type === 'wait' && node.data.config.resumeOn === 'approval') {
    return [...fixedHandles('wait'), { id: 'rejected', label: 'rejected', tone: 'error' }];
  }
  return fixedHandles(node.type);
}

export function hasTargetHandle(type: NodeType): boolean {
  return type !== 'start';
}

export function sourceHandleIds(node: EditorNode): string[] {
  return sourceHandles(node).map((h) => h.id);
}
