import { describe, expect, it } from 'vitest';

import { describeBinding, matchShortcut, SHORTCUTS, type KeyEventLike } from './shortcuts';

function key(k: string, mods: Partial<KeyEventLike> = {}): KeyEventLike {
  return { key: k, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...mods };
}

describe('shortcuts', () => {
  it('matches the documented bindings', () => {
    expect(matchShortcut(key('z', { ctrlKey: true }))).toBe('undo');
    expect(matchShortcut(key('Z', { ctrlKey: true, shiftKey: true }))).toBe('redo');
    expect(matchShortcut(key('y', { metaKey: true }))).toBe('redo');
    expect(matchShortcut(key('c', { ctrlKey: true }))).toBe('copy');
    expect(matchShortcut(key('v', { ctrlKey: true }))).toBe('paste');
    expect(matchShortcut(key('d', { ctrlKey: true }))).toBe('duplicate');
    expect(matchShortcut(key('Delete'))).toBe('delete');
    expect(matchShortcut(key('Backspace'))).toBe('delete');
    expect(matchShortcut(key('L', { shiftKey: true }))).toBe('layout');
    expect(matchShortcut(key('1'))).toBe('fitView');
    expect(matchShortcut(key('?', { shiftKey: true }))).toBe('help');
    expect(matchShortcut(key('s', { ctrlKey: true }))).toBe('save');
    expect(matchShortcut(key('Enter', { ctrlKey: true }))).toBe('testRun');
    expect(matchShortcut(key(',', { ctrlKey: true }))).toBe('settings');
    expect(matchShortcut(key(',', { metaKey: true }), true)).toBe('settings');
    expect(matchShortcut(key(','))).toBeNull();
    expect(describeBinding({ key: ',', mod: true }, false)).toBe('Ctrl+,');
  });

  it('plain Enter opens the node details; Ctrl+Enter stays the test run; in a field Enter is a newline', () => {
    expect(matchShortcut(key('Enter'))).toBe('openDetails');
    expect(matchShortcut(key('Enter', { shiftKey: true }))).toBeNull();
    expect(matchShortcut(key('Enter', { altKey: true }))).toBeNull();
    expect(matchShortcut(key('Enter', { ctrlKey: true }))).toBe('testRun');
    expect(matchShortcut(key('Enter'), true)).toBeNull();
  });

  it('does not fire on plain typing or wrong modifiers', () => {
    expect(matchShortcut(key('z'))).toBeNull();
    expect(matchShortcut(key('l'))).toBeNull();
    expect(matchShortcut(key('c', { ctrlKey: true, altKey: true }))).toBeNull();
  });

  it('inside a text field only fires the ones that cannot eat text', () => {
    expect(matchShortcut(key('Backspace'), true)).toBeNull();
    expect(matchShortcut(key('z', { ctrlKey: true }), true)).toBeNull();
    expect(matchShortcut(key('s', { ctrlKey: true }), true)).toBe('save');
  });

  it('has a unique id and a description for each entry', () => {
    const ids = SHORTCUTS.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(describeBinding({ key: 'z', mod: true, shift: true }, false)).toBe('Ctrl+Shift+Z');
    expect(describeBinding({ key: 'z', mod: true }, true)).toBe('⌘+Z');
  });
});
