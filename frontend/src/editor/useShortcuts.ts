/** Binds the shortcut table (shortcuts.ts) to window keydown for the editor page. */
import { useEffect, useRef } from 'react';

import { matchShortcut, type ShortcutId } from './shortcuts';

function isTextTarget(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable || target.closest('.cm-editor')) return true;
  const tag = target.tagName;
  if (tag === 'TEXTAREA' || tag === 'SELECT') return true;
  if (tag === 'INPUT') {
    const type = (target as HTMLInputElement).type;
    return !['checkbox', 'radio', 'button', 'submit'].includes(type);
  }
  return false;
}

export function useShortcuts(handlers: Partial<Record<ShortcutId, () => void>>): void {
  const ref = useRef(handlers);
  useEffect(() => {
    ref.current = handlers; // the latest handlers, without re-binding the listener on every render
  });
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || document.querySelector('.modal')) return;
      const id = matchShortcut(e, isTextTarget(e.target));
      const handler = id ? ref.current[id] : undefined;
      if (!handler) return;
      e.preventDefault();
      handler();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
}
