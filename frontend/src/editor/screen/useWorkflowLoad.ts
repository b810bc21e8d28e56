/**
 * Open a workflow (or one of its versions, read-only) into the store. "Restore this version" (`restore`, or
 * arriving with `state.restoreVersion` from a version's read-only view) saves that version again on the server
 * as the next version, then opens it.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import { useLocation, useNavigate } from 'react-router';

import { workflows } from '../../api/endpoints';
import { preconnectRealtime } from '../../api/realtime';
import type { Workflow } from '../../api/types';
import { errorMessage, toast } from '../../shared/toasts';
import type { EditorStore, WorkflowMeta } from '../editorStore';
import { takeArrivedWorkflow, takePrefetchedWorkflow } from '../prefetch';

export function metaOf(w: Workflow): WorkflowMeta {
  return { workflowId: w.id, version: w.version, title: w.title, description: w.description, options: w.options };
}

export type WorkflowLoad = {
  loaded: boolean;
  loadError: string | null;
  reload: () => Promise<void>;
  restore: (version: number) => Promise<void>;
};

export function useWorkflowLoad(store: EditorStore, workflowId: string, viewVersion: number | null): WorkflowLoad {
  const navigate = useNavigate();
  const location = useLocation();
  const readOnly = viewVersion !== null;
  // When the prefetched workflow (prefetch.ts) has already arrived, the first render shows the graph:
  // no empty editor rendered and committed first, then the load effect, then the graph.
  const [loaded, setLoaded] = useState(() => {
    if (viewVersion !== null || (location.state as { restoreVersion?: number } | null)?.restoreVersion) return false;
    const arrived = takeArrivedWorkflow(workflowId);
    if (!arrived) return false;
    store.getState().load(metaOf(arrived), arrived);
    performance.mark('flowdeck:graph-loaded');
    return true;
  });
  const [loadError, setLoadError] = useState<string | null>(null);

  const reload = useCallback(async () => {
    setLoadError(null);
    try {
      const latest = (await takePrefetchedWorkflow(workflowId)) ?? (await workflows.get(workflowId));
      const shown = viewVersion !== null ? await workflows.version(workflowId, viewVersion) : latest;
      store.getState().load(viewVersion !== null ? metaOf(shown) : metaOf(latest), shown, { readOnly });
      performance.mark('flowdeck:graph-loaded');
      const restore = (location.state as { restoreVersion?: number } | null)?.restoreVersion;
      if (restore && viewVersion === null) {
        navigate(location.pathname, { replace: true, state: null });
        const restored = await workflows.restore(workflowId, restore);
        store.getState().load(metaOf(restored), restored);
        toast('success', `Version ${restore} restored as version ${restored.version}.`);
      }
      setLoaded(true);
    } catch (err) {
      setLoadError(errorMessage(err));
    }
  }, [workflowId, viewVersion, readOnly, store, location.state, location.pathname, navigate]);

  // Load once per workflow and version (the restore's navigate changes location.state: that is no new load).
  const latestReload = useRef(reload);
  useEffect(() => {
    latestReload.current = reload;
  });
  useEffect(() => {
    if (!loaded) void latestReload.current();
  }, [workflowId, viewVersion, loaded]);

  // Connect Socket.IO once the page is idle (after the canvas has rendered), ready for the first Test run.
  useEffect(() => {
    if (!loaded || readOnly) return;
    if (typeof window.requestIdleCallback === 'function') {
      const handle = window.requestIdleCallback(preconnectRealtime, { timeout: 1000 });
      return () => window.cancelIdleCallback(handle);
    }
    const timer = window.setTimeout(preconnectRealtime, 200);
    return () => window.clearTimeout(timer);
  }, [loaded, readOnly]);

  const restore = useCallback(
    async (version: number) => {
      try {
        const restored = await workflows.restore(workflowId, version);
        store.getState().load(metaOf(restored), restored);
        toast('success', `Version ${version} restored as version ${restored.version}.`);
      } catch (err) {
        toast('error', `Could not restore version ${version}: ${errorMessage(err)}`);
      }
    },
    [workflowId, store],
  );

  return { loaded, loadError, reload, restore };
}
