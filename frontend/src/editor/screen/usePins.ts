/** Pinned outputs: toggle a node's pin, "test from here" (its ancestors' last outputs pinned), "Debug in editor" (its input too). */
import { useCallback, useEffect } from 'react';
import { useSearchParams } from 'react-router';

import { runs as runsApi } from '../../api/endpoints';
import { ancestors } from '../../graph/connect';
import { completedOutputs } from '../../runs/runReducer';
import { errorMessage, toast } from '../../shared/toasts';
import type { EditorStore } from '../editorStore';
import type { TestRunControls } from '../useTestRun';

export type PinControls = { togglePin: () => void; testFromHere: (nodeId: string) => void };

export function usePins(store: EditorStore, loaded: boolean, testRun: TestRunControls): PinControls {
  const [search, setSearch] = useSearchParams();

  // "Debug in editor" (its input too) (?debug=<run id>): a production run's outputs become pins.
  const debugRun = search.get('debug');
  useEffect(() => {
    if (!loaded || !debugRun) return;
    runsApi
      .get(debugRun)
      .then((detail) => {
        const ids = new Set(store.getState().nodes.map((n) => n.id));
        const outputs = Object.fromEntries(
          Object.entries(completedOutputs({ ...detail, input: detail.input, output: detail.output, nodes: detail.nodes ?? {}, runId: detail.instanceId, log: [] })).filter(([id]) => ids.has(id)),
        );
        store.getState().setPins({ ...store.getState().pins, ...outputs });
        // The run's input becomes the test input, so a test run replays it exactly.
        store.getState().setTestInput(JSON.stringify(detail.input ?? {}, null, 2));
        store.getState().dispatchRun({ kind: 'detail', detail });
        toast('success', `Loaded the input and ${Object.keys(outputs).length} node outputs of run ${debugRun.slice(0, 8)} as pins.`);
        setSearch({}, { replace: true });
      })
      .catch((err: unknown) => toast('error', `Could not load run ${debugRun}: ${errorMessage(err)}`));
  }, [loaded, debugRun, store, setSearch]);

  const testFromHere = useCallback(
    (nodeId: string) => {
      const s = store.getState();
      const outputs = completedOutputs(s.run);
      const upstream = ancestors(s.edges, nodeId);
      const pins = Object.fromEntries(upstream.filter((id) => id in outputs).map((id) => [id, outputs[id]]));
      const missing = upstream.filter((id) => !(id in outputs) && !(id in s.pins));
      if (missing.length > 0) toast('warning', `No output from the last run for ${missing.join(', ')}: they run again.`);
      void testRun.start(pins);
    },
    [store, testRun],
  );

  const togglePin = useCallback(() => {
    const s = store.getState();
    const id = s.inspectorNodeId ?? [...s.selectedIds()][0];
    if (!id) return;
    if (id in s.pins) {
      s.removePin(id);
      toast('info', `Unpinned ${id}.`);
    } else {
      const out = completedOutputs(s.run);
      if (id in out) {
        s.setPin(id, out[id]);
        toast('info', `Pinned the last output of ${id}.`);
      } else toast('warning', `${id} has no output from the last run to pin.`);
    }
  }, [store]);

  return { togglePin, testFromHere };
}
