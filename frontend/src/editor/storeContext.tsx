import { createContext, useContext, useState, type ReactNode } from 'react';
import { useStore } from 'zustand';
import { useShallow } from 'zustand/react/shallow';

import { createEditorStore, type EditorState, type EditorStore } from './editorStore';

const EditorStoreContext = createContext<EditorStore | null>(null);

export function EditorStoreProvider({ children, store }: { children: ReactNode; store?: EditorStore }) {
  const [own] = useState(() => store ?? createEditorStore());
  return <EditorStoreContext.Provider value={store ?? own}>{children}</EditorStoreContext.Provider>;
}

export function useEditorStoreApi(): EditorStore {
  const store = useContext(EditorStoreContext);
  if (!store) throw new Error('useEditor outside <EditorStoreProvider>');
  return store;
}

/** Read one slice of the page's editor store (keep selectors narrow: they decide re-renders). */
export function useEditor<T>(selector: (state: EditorState) => T): T {
  return useStore(useEditorStoreApi(), selector);
}

/** Like useEditor, for a selector that builds a small object or array: re-renders only when a field changes. */
export function useEditorShallow<T extends object>(selector: (state: EditorState) => T): T {
  return useStore(useEditorStoreApi(), useShallow(selector));
}
