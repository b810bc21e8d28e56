/** The output handles each node type really has (SPEC §2), and whether it takes input. */
import type { EditorNode, NodeType } from './model';

export type HandleTone = 'default' | 'success' | 'error' | 'branch' | 'else' | 'loop' | 'done';
export type HandleSpec = { id: string; label: string; tone: HandleTone };

/** The id of the single input handle every node but `start` has. */
export const TARGET_HANDLE = 'in';

export function sourceHandles(node: EditorNode): HandleSpec[] {
  switch (node.type) {
    case 'start':
    case 'delay':
      return [{ id: 'default', label: '', tone: 'default' }];
    case 'end':
      return [];
    case 'python':
    case 'dataQuery':
    case 'workflow':
      return [
        { id: 'success', label: 'success', tone: 'success' },
        { id: 'error', label: 'error', tone: 'error' },
      ];
    case 'condition':
      return [
        ...node.data.config.branches.map((b): HandleSpec => ({ id: b.id, label: b.label || b.id, tone: 'branch' })),
        { id: 'else', label: 'else', tone: 'else' },
      ];
    case 'loop':
      return [
        { id: 'loop', label: 'loop', tone: 'loop' },
        { id: 'done', label: 'done', tone: 'done' },
      ];
  }
}

export function hasTargetHandle(type: NodeType): boolean {
  return type !== 'start';
}

export function sourceHandleIds(node: EditorNode): string[] {
  return sourceHandles(node).map((h) => h.id);
}
