/** Test runs of the unsaved graph: start (POST /api/test-runs), follow live over Socket.IO, stop. */
import { useCallback, useEffect, useRef, useState } from 'react';

import { ApiError } from '../api/client';
import { noticeRunUpdate } from '../approvals/approvalsStore';
import { runs, type TestRunBody } from '../api/endpoints';
import { subscribeToRun } from '../api/realtime';
import type { RealtimeMessage } from '../api/realtime-types';
import { TERMINAL_RUN_STATUSES } from '../api/types';
import { errorMessage, toast } from '../shared/toasts';
import type { EditorStore } from './editorStore';

export type TestRunControls = {
  starting: boolean;
  start: (extraPins?: Record<string, unknown>) => Promise<void>;
  stop: () => Promise<void>;
  /** Follow a test run that is already going (one found again after a reload). */
  follow: (runId: string) => Promise<void>;
};

export function parseJsonInput(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  if (text.trim() === '') return { ok: true, value: null };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, error: errorMessage(err) };
  }
}

export function useTestRun(store: EditorStore, onInputError: (message: string) => void): TestRunControls {
  const leave = useRef<(() => void) | null>(null);
  const [starting, setStarting] = useState(false);

  useEffect(() => () => leave.current?.(), []);

  const refresh = useCallback(
    async (runId: string) => {
      try {
        const detail = await runs.get(runId);
        if (store.getState().run?.runId === runId) store.getState().dispatchRun({ kind: 'detail', detail });
      } catch {
        // the live state already shows the outcome; the detail only adds logs
      }
    },
    [store],
  );

  const follow = useCallback(
    async (instanceId: string) => {
      leave.current?.();
      leave.current = null;
      let first = true;
      const onMessage = (msg: RealtimeMessage) => {
        if (first) performance.mark('flowdeck:test-run-first-message');
        first = false;
        store.getState().dispatchRun(msg);
        noticeRunUpdate(msg);
        if ((msg.kind === 'status' || msg.kind === 'snapshot') && TERMINAL_RUN_STATUSES.has(msg.status)) void refresh(instanceId);
      };
      leave.current = await subscribeToRun(instanceId, onMessage);
    },
    [store, refresh],
  );

  const start = useCallback(
    async (extraPins: Record<string, unknown> = {}) => {
      const state = store.getState();
      const input = parseJsonInput(state.testInput);
      if (!input.ok) {
        onInputError(input.error);
        toast('error', `The test input is not valid JSON: ${input.error}`);
        return;
      }
      const definition = state.definition();
      const ids = new Set(definition.nodes.map((n) => n.id));
      const pinned = Object.fromEntries(Object.entries({ ...state.pins, ...extraPins }).filter(([id]) => ids.has(id)));
      setStarting(true);
      leave.current?.();
      leave.current = null;
      try {
        const body: TestRunBody = { ...definition, input: input.value };
        if (Object.keys(pinned).length > 0) body.pinned = pinned;
        if (state.workflowId && !state.readOnly) body.workflowId = state.workflowId; // listed in its history
        performance.mark('flowdeck:test-run-requested');
        const { instanceId } = await runs.startTest(body);
        performance.mark('flowdeck:test-run-started');
        store.getState().dispatchRun({ kind: 'started', runId: instanceId, input: input.value, isTest: true });
        await follow(instanceId);
      } catch (err) {
        if (err instanceof ApiError && err.problems.length > 0) {
          store.getState().setProblems(err.problems);
          const errors = err.problems.filter((p) => p.severity !== 'warning').length;
          toast('error', `The test run did not start: ${errors} problem${errors === 1 ? '' : 's'} to fix (see Problems).`);
        } else {
          toast('error', `The test run did not start: ${errorMessage(err)}`);
        }
      } finally {
        setStarting(false);
      }
    },
    [store, follow, onInputError],
  );

  const stop = useCallback(async () => {
    const run = store.getState().run;
    if (!run) return;
    leave.current?.();
    leave.current = null;
    try {
      await runs.deleteTest(run.runId);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) toast('error', `Could not stop the run: ${errorMessage(err)}`);
    }
    store.getState().dispatchRun({ kind: 'stopped' });
  }, [store]);

  return { starting, start, stop, follow };
}
