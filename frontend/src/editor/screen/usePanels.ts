/** Which panels are open: settings or the node panel on the right (one at a time), and the bottom panel's tab. */
import { useCallback, useEffect, useState } from 'react';

import type { BottomTab } from '../BottomPanel';
import type { EditorStore } from '../editorStore';
import { useEditor } from '../storeContext';

export type Panels = {
  settingsOpen: boolean;
  toggleSettings: () => void;
  closeSettings: () => void;
  inspectorOpen: boolean;
  bottomTab: BottomTab;
  setBottomTab: (tab: BottomTab) => void;
  bottomOpen: boolean;
  setBottomOpen: (open: boolean) => void;
  /** Open the bottom panel on a tab. */
  showBottom: (tab: BottomTab) => void;
};

export function usePanels(store: EditorStore): Panels {
  const [settingsOpen, setSettingsOpen] = useState(false);
  const [bottomTab, setBottomTab] = useState<BottomTab>('problems');
  const [bottomOpen, setBottomOpen] = useState(false);
  const inspectorOpen = useEditor((s) => s.inspectorNodeId !== null);

  // Settings and the node panel share the right side: opening a node closes the settings, and back.
  const toggleSettings = useCallback(() => {
    setSettingsOpen((open) => {
      if (!open) store.getState().openInspector(null);
      return !open;
    });
  }, [store]);
  const closeSettings = useCallback(() => setSettingsOpen(false), []);
  useEffect(() => {
    if (inspectorOpen) setSettingsOpen(false);
  }, [inspectorOpen]);

  const showBottom = useCallback((tab: BottomTab) => {
    setBottomTab(tab);
    setBottomOpen(true);
  }, []);

  // Open the run panel when a run starts.
  const runId = useEditor((s) => s.run?.runId);
  useEffect(() => {
    if (runId) showBottom('run');
  }, [runId, showBottom]);

  return { settingsOpen, toggleSettings, closeSettings, inspectorOpen, bottomTab, setBottomTab, bottomOpen, setBottomOpen, showBottom };
}
