/**
 * Enter (`openDetails` in the shortcut table, which the help overlay lists) opens the node details view of
 * the inspected node (else of the one selected node) while the focus is on the canvas or nowhere in
 * particular, never while typing, on a button or with a dialog open.
 */
import { useEffect } from 'react';

import type { EditorStore } from '../editorStore';
import { matchShortcut } from '../shortcuts';

function onCanvasOrNowhere(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return true;
  if (target === document.body) return true;
  return target.closest('.react-flow') !== null && !target.closest('input, textarea, select, button, [contenteditable="true"]');
}

export function useOpenDetailsKey(store: EditorStore): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || matchShortcut(e) !== 'openDetails') return;
      if (document.querySelector('.modal') || !onCanvasOrNowhere(e.target)) return;
      const s = store.getState();
      const selected = s.nodes.filter((n) => n.selected);
      const id = s.inspectorNodeId ?? (selected.length === 1 ? selected[0]?.id : undefined);
      if (!id) return;
      e.preventDefault();
      s.openDetails(id);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [store]);
}
