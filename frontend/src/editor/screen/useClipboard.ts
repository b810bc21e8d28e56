/** Copy, cut and paste of the selection (the fragment is kept by clipboardStore, across workflows and tabs). */
import { useReactFlow } from '@xyflow/react';
import { useCallback } from 'react';

import type { EditorEdge, EditorNode } from '../../graph/model';
import { toast } from '../../shared/toasts';
import { readClipboard, writeClipboard } from '../clipboardStore';
import type { EditorStore } from '../editorStore';

export type ClipboardControls = { copy: () => boolean; cut: () => void; paste: () => void };

export function useClipboard(store: EditorStore): ClipboardControls {
  const flow = useReactFlow<EditorNode, EditorEdge>();

  const copy = useCallback(() => {
    const fragment = store.getState().copySelection();
    if (!fragment) return false;
    writeClipboard(fragment);
    toast('info', `Copied ${fragment.nodes.length} node${fragment.nodes.length === 1 ? '' : 's'}.`);
    return true;
  }, [store]);

  const cut = useCallback(() => {
    if (copy()) store.getState().deleteSelection();
  }, [copy, store]);

  // The pasted nodes land around the middle of the visible canvas.
  const paste = useCallback(() => {
    const fragment = readClipboard();
    if (!fragment || fragment.nodes.length === 0) return;
    const xs = fragment.nodes.map((n) => n.position?.x ?? 0);
    const ys = fragment.nodes.map((n) => n.position?.y ?? 0);
    const canvas = document.querySelector('[data-testid="canvas"]')?.getBoundingClientRect();
    const center = canvas ? flow.screenToFlowPosition({ x: canvas.left + canvas.width / 2, y: canvas.top + canvas.height / 2 }) : { x: 0, y: 0 };
    store.getState().paste(fragment, { x: Math.round(center.x - Math.min(...xs) - 100), y: Math.round(center.y - Math.min(...ys) - 40) });
  }, [flow, store]);

  return { copy, cut, paste };
}
