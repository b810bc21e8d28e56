/** The editor's keyboard shortcuts: one table for the handler and the help overlay. Pure, no DOM. */

export type ShortcutId =
  | 'undo'
  | 'redo'
  | 'copy'
  | 'cut'
  | 'paste'
  | 'duplicate'
  | 'delete'
  | 'selectAll'
  | 'layout'
  | 'fitView'
  | 'zoomIn'
  | 'zoomOut'
  | 'save'
  | 'testRun'
  | 'pin'
  | 'help'
  | 'settings'
  | 'searchNodes'
  | 'addNote'
  | 'openDetails'
  | 'escape';

export type KeyEventLike = {
  key: string;
  ctrlKey: boolean;
  metaKey: boolean;
  shiftKey: boolean;
  altKey: boolean;
};

type Binding = { key: string; mod?: boolean; shift?: boolean; alt?: boolean };

export type Shortcut = {
  id: ShortcutId;
  group: 'Edit' | 'Canvas' | 'Workflow';
  description: string;
  bindings: Binding[];
  /** Also fires while typing in a field (only ones that cannot eat text). */
  inFields?: boolean;
};

export const SHORTCUTS: readonly Shortcut[] = [
  { id: 'undo', group: 'Edit', description: 'Undo', bindings: [{ key: 'z', mod: true }] },
  {
    id: 'redo',
    group: 'Edit',
    description: 'Redo',
    bindings: [
      { key: 'z', mod: true, shift: true },
      { key: 'y', mod: true },
    ],
  },
  { id: 'copy', group: 'Edit', description: 'Copy selected nodes (paste into any workflow)', bindings: [{ key: 'c', mod: true }] },
  { id: 'cut', group: 'Edit', description: 'Cut selected nodes', bindings: [{ key: 'x', mod: true }] },
  { id: 'paste', group: 'Edit', description: 'Paste nodes', bindings: [{ key: 'v', mod: true }] },
  { id: 'duplicate', group: 'Edit', description: 'Duplicate selected nodes', bindings: [{ key: 'd', mod: true }] },
  { id: 'delete', group: 'Edit', description: 'Delete selection', bindings: [{ key: 'Delete' }, { key: 'Backspace' }] },
  { id: 'selectAll', group: 'Edit', description: 'Select all nodes', bindings: [{ key: 'a', mod: true }] },
  { id: 'pin', group: 'Edit', description: 'Pin / unpin the selected node’s last output', bindings: [{ key: 'p' }] },
  { id: 'searchNodes', group: 'Edit', description: 'Search the node panel (Enter adds the node)', bindings: [{ key: '/' }] },
  { id: 'addNote', group: 'Edit', description: 'Add a sticky note', bindings: [{ key: 'n', shift: true }] },
  {
    id: 'openDetails',
    group: 'Canvas',
    description: 'Open the selected node’s details: input, parameters and output (or double-click it)',
    bindings: [{ key: 'Enter' }],
  },
  { id: 'layout', group: 'Canvas', description: 'Auto-layout (tidy up)', bindings: [{ key: 'l', shift: true }] },
  { id: 'fitView', group: 'Canvas', description: 'Zoom to fit', bindings: [{ key: '1' }] },
  { id: 'zoomIn', group: 'Canvas', description: 'Zoom in', bindings: [{ key: '+' }, { key: '=' }] },
  { id: 'zoomOut', group: 'Canvas', description: 'Zoom out', bindings: [{ key: '-' }] },
  { id: 'save', group: 'Workflow', description: 'Save a new version', bindings: [{ key: 's', mod: true }], inFields: true },
  { id: 'testRun', group: 'Workflow', description: 'Test run', bindings: [{ key: 'Enter', mod: true }], inFields: true },
  {
    id: 'settings',
    group: 'Workflow',
    description: 'Workflow settings: title, timeouts, schedules, webhook',
    bindings: [{ key: ',', mod: true }],
    inFields: true,
  },
  { id: 'help', group: 'Workflow', description: 'Show this list', bindings: [{ key: '?' }] },
  { id: 'escape', group: 'Canvas', description: 'Close panels, clear the selection', bindings: [{ key: 'Escape' }] },
];

function matches(binding: Binding, e: KeyEventLike): boolean {
  const mod = e.ctrlKey || e.metaKey;
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (key !== binding.key) return false;
  if (Boolean(binding.mod) !== mod || Boolean(binding.alt) !== e.altKey) return false;
  // Punctuation like ? and + already depends on Shift, so Shift only counts for letters and named keys.
  const shiftMatters = /^[a-z]$/.test(binding.key) || binding.key.length > 1;
  return !shiftMatters || Boolean(binding.shift) === e.shiftKey;
}

export function matchShortcut(e: KeyEventLike, inField = false): ShortcutId | null {
  for (const shortcut of SHORTCUTS) {
    if (inField && !shortcut.inFields) continue;
    if (shortcut.bindings.some((b) => matches(b, e))) return shortcut.id;
  }
  return null;
}

export function describeBinding(binding: Binding, mac: boolean): string {
  const parts: string[] = [];
  if (binding.mod) parts.push(mac ? '⌘' : 'Ctrl');
  if (binding.alt) parts.push(mac ? '⌥' : 'Alt');
  if (binding.shift && binding.key !== '?') parts.push('Shift');
  const names: Record<string, string> = { Delete: 'Del', Backspace: '⌫', Escape: 'Esc', Enter: 'Enter' };
  parts.push(names[binding.key] ?? binding.key.toUpperCase());
  return parts.join('+');
}
