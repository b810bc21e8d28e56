/**
 * The live "saved elsewhere" notice: the editor hears every version saved of its workflow (Socket.IO
 * `workflow_saved`) and shows the newest one it does not have, so a second tab or a colleague's save is
 * noticed at once instead of at the next save's 409. Its own saves never show: their version is the
 * editor's by the time the save settles.
 */
import { useEffect, useState } from 'react';

import { watchWorkflow, type WorkflowSaved } from '../../api/realtime';
import { useEditor } from '../storeContext';

export type SavedElsewhere = { notice: WorkflowSaved | null; dismiss: () => void };

export function useSavedElsewhere(workflowId: string, active: boolean, saving: boolean): SavedElsewhere {
  const version = useEditor((s) => s.version);
  const [latest, setLatest] = useState<WorkflowSaved | null>(null);
  const [dismissed, setDismissed] = useState(0);
  useEffect(() => {
    if (!workflowId || !active) return;
    let stop: (() => void) | null = null;
    // Once the page is idle, like the run connection: opening the editor stays as fast as before.
    const start = () => {
      stop = watchWorkflow(workflowId, (msg) => setLatest((old) => (!old || msg.version > old.version ? msg : old)));
    };
    const idle = typeof window.requestIdleCallback === 'function';
    const handle = idle ? window.requestIdleCallback(start, { timeout: 1000 }) : window.setTimeout(start, 200);
    return () => {
      if (idle) window.cancelIdleCallback(handle);
      else window.clearTimeout(handle);
      stop?.();
    };
  }, [workflowId, active]);
  const shown = latest !== null && !saving && latest.version > version && latest.version > dismissed;
  return { notice: shown ? latest : null, dismiss: () => setDismissed(latest?.version ?? 0) };
}
