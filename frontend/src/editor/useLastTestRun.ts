/**
 * The last test run's data survives a reload: test runs started in the editor carry the workflow's id, so
 * on opening a saved workflow the latest of them (GET /api/runs?workflowId=…&isTest=true&limit=1) is read
 * back into the run panel and the canvas, and followed live when it has not finished yet.
 */
import { useEffect } from 'react';

import { runs } from '../api/endpoints';
import { TERMINAL_RUN_STATUSES } from '../api/types';
import type { EditorStore } from './editorStore';

export function useLastTestRun(
  store: EditorStore,
  workflowId: string,
  enabled: boolean,
  follow: (runId: string) => Promise<void>,
): void {
  useEffect(() => {
    if (!enabled) return;
    let live = true;
    void (async () => {
      try {
        const page = await runs.list({ workflowId, isTest: true, limit: 1 });
        const last = page.items[0];
        if (!live || !last || store.getState().run !== null) return; // a run started meanwhile wins
        const detail = await runs.get(last.instanceId);
        if (!live || store.getState().run !== null) return;
        store.getState().dispatchRun({ kind: 'detail', detail });
        if (!TERMINAL_RUN_STATUSES.has(detail.status)) await follow(detail.instanceId);
      } catch {
        // nothing to show: the editor works without it
      }
    })();
    return () => {
      live = false;
    };
  }, [store, workflowId, enabled, follow]);
}
