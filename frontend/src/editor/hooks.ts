/** The editor page's effects: validation as you edit, pins and test input kept per workflow. */
import { useEffect } from 'react';

import { workflows } from '../api/endpoints';
import { ApiError } from '../api/client';
import type { EditorStore } from './editorStore';

const VALIDATE_DEBOUNCE_MS = 350;

/** POST /api/workflows/validate whenever the definition changes (debounced; stale answers dropped). */
export function useLiveValidation(store: EditorStore, enabled: boolean): void {
  useEffect(() => {
    if (!enabled) return;
    let timer: number | undefined;
    let controller: AbortController | null = null;
    let lastJson = '';
    const run = () => {
      const s = store.getState();
      const definition = s.definition();
      const json = JSON.stringify([s.workflowId, definition]);
      if (json === lastJson) return;
      lastJson = json;
      window.clearTimeout(timer);
      timer = window.setTimeout(() => {
        controller?.abort();
        controller = new AbortController();
        workflows
          .validate(definition, controller.signal, s.workflowId)
          .then((result) => store.getState().setProblems(result.problems))
          .catch((err: unknown) => {
            if (err instanceof ApiError && err.problems.length > 0) store.getState().setProblems(err.problems);
          });
      }, VALIDATE_DEBOUNCE_MS);
    };
    run();
    const unsubscribe = store.subscribe((state, previous) => {
      if (
        state.workflowId !== previous.workflowId ||
        state.nodes !== previous.nodes ||
        state.edges !== previous.edges ||
        state.title !== previous.title ||
        state.description !== previous.description ||
        state.options !== previous.options
      )
        run();
    });
    return () => {
      unsubscribe();
      window.clearTimeout(timer);
      controller?.abort();
    };
  }, [store, enabled]);
}

function readJson(key: string): unknown {
  try {
    const text = window.localStorage.getItem(key);
    return text === null ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}

/** Pins and the test input live in localStorage per workflow (the SPEC keeps them out of the definition). */
export function usePerWorkflowDrafts(store: EditorStore, workflowId: string | undefined, ready: boolean): void {
  useEffect(() => {
    if (!workflowId || !ready) return;
    const pinsKey = `flowdeck.pins.${workflowId}`;
    const inputKey = `flowdeck.testInput.${workflowId}`;
    const pins = readJson(pinsKey);
    if (pins && typeof pins === 'object' && !Array.isArray(pins)) store.getState().setPins(pins as Record<string, unknown>);
    const input = window.localStorage.getItem(inputKey);
    if (input !== null) store.getState().setTestInput(input);
    return store.subscribe((state, previous) => {
      if (state.pins !== previous.pins) window.localStorage.setItem(pinsKey, JSON.stringify(state.pins));
      if (state.testInput !== previous.testInput) window.localStorage.setItem(inputKey, state.testInput);
    });
  }, [store, workflowId, ready]);
}
