// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';

import type { DefinitionJson } from '../../graph/convert';
import type { RunAction } from '../../runs/runReducer';
import { createEditorStore } from '../editorStore';
import { EditorStoreProvider } from '../storeContext';
import { RunDataTab } from './RunDataTab';

afterEach(cleanup);

/** start -> each (loop) -> work (python, 3 attempts) in the body; each -> end on done. */
const LOOP: DefinitionJson = {
  title: 'Loop',
  nodes: [
    { id: 'start', type: 'start', label: 'Start', position: { x: 0, y: 0 }, config: {} },
    { id: 'each', type: 'loop', label: 'Each', position: { x: 200, y: 0 }, config: { items: '{{ ctx.input.items }}' } },
    {
      id: 'work',
      type: 'python',
      label: 'Work',
      position: { x: 400, y: 0 },
      config: { code: "def run(ctx):\n    return ctx['loop']['item'] * 2\n" },
      retry: { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 60 },
    },
    { id: 'after', type: 'python', label: 'After', position: { x: 600, y: 0 }, config: { code: "def run(ctx):\n    return ctx['work']\n" } },
    { id: 'end', type: 'end', label: 'End', position: { x: 400, y: 200 }, config: { outputParameters: {} } },
  ],
  edges: [
    { id: 'a', source: 'start', target: 'each', sourceHandle: 'default' },
    { id: 'b', source: 'each', target: 'work', sourceHandle: 'loop' },
    { id: 'c', source: 'each', target: 'end', sourceHandle: 'done' },
    { id: 'd', source: 'work', target: 'after', sourceHandle: 'success' },
  ],
};

function storeWithRun() {
  const store = createEditorStore();
  store.getState().load({ workflowId: 'w1', version: 1, title: 'Loop', description: null, options: null }, LOOP);
  store.getState().dispatchRun({ kind: 'started', runId: 'r1', input: { items: ['apple', 'pear'] }, isTest: true });
  return store;
}

function renderWork(store: ReturnType<typeof createEditorStore>, id = 'work') {
  const work = store.getState().nodes.find((n) => n.id === id);
  if (!work) throw new Error(`no ${id} node`);
  render(
    <EditorStoreProvider store={store}>
      <RunDataTab node={work} context={{ input: { items: ['apple', 'pear'] } }} onTestFromHere={undefined} />
    </EditorStoreProvider>,
  );
}

const iteration = (index: number, status: 'COMPLETED' | 'FAILED', output: unknown) => ({
  status,
  attempt: 1,
  attemptInRetry: 1,
  startedAt: 1,
  completedAt: 2,
  output,
  error: status === 'FAILED' ? 'boom' : null,
  loop: { item: ['apple', 'pear'][index], index, count: 2 },
});

function failedRun(): RunAction {
  return {
    kind: 'detail',
    detail: {
      instanceId: 'r1',
      workflowId: 'w1',
      version: 1,
      isTest: true,
      status: 'FAILED',
      trigger: 'test',
      error: 'boom',
      createdAt: 1,
      startedAt: 1,
      completedAt: 2,
      slaBreachedAt: null,
      parentInstanceId: null,
      input: { items: ['apple', 'pear'] },
      output: null,
      nodes: {
        work: {
          status: 'FAILED',
          attempt: 1,
          attemptInRetry: 1,
          startedAt: 1,
          completedAt: 2,
          output: null,
          error: 'boom',
          iterations: { '0': iteration(0, 'COMPLETED', 'appleapple'), '1': iteration(1, 'FAILED', null) },
        },
        after: {
          status: 'COMPLETED',
          attempt: 1,
          attemptInRetry: 1,
          startedAt: 1,
          completedAt: 2,
          output: null,
          error: null,
          iterations: { '0': iteration(0, 'COMPLETED', 'appleapple') },
        },
      },
    },
  };
}

describe('RunDataTab of a loop-body node', () => {
  it('counts a first attempt as 1 while only live iteration updates arrived', () => {
    const store = storeWithRun();
    const update = { kind: 'node', instanceID: 'r1', nodeID: 'work', iteration: '0', attempt: 1, output: null, outputTruncated: null, error: null } as const;
    store.getState().dispatchRun({ ...update, status: 'RUNNING', at: 1, pinned: false, nextAttemptAt: null, childInstanceId: null, waitingFor: null });
    renderWork(store);
    expect(screen.getByTestId('run-data-attempts').textContent).toBe('attempt 1 of 3');
  });

  it('opens each iteration with the ctx.loop it received and its output', () => {
    const store = storeWithRun();
    store.getState().dispatchRun(failedRun());
    renderWork(store);
    expect(screen.getByTestId('run-data-status').dataset.status).toBe('FAILED');
    expect(screen.getByTestId('run-data-attempts').textContent).toBe('attempt 1 of 3');
    // The failed iteration opens first: what it received, loop included.
    expect(screen.getByTestId('run-data-iteration').textContent).toContain('#1');
    expect(JSON.parse(screen.getByTestId('run-data-input').textContent ?? '')).toEqual({
      input: { items: ['apple', 'pear'] },
      loop: { item: 'pear', index: 1, count: 2 },
    });
    fireEvent.click(screen.getByTestId('iteration-row-0'));
    expect(screen.getByTestId('iteration-row-0').getAttribute('aria-selected')).toBe('true');
    expect(JSON.parse(screen.getByTestId('run-data-input').textContent ?? '').loop.item).toBe('apple');
    expect(JSON.parse(screen.getByTestId('run-data-output').textContent ?? '')).toBe('appleapple');
  });

  it('gives a later body node the outputs of its own iteration', () => {
    const store = storeWithRun();
    store.getState().dispatchRun(failedRun());
    renderWork(store, 'after');
    expect(JSON.parse(screen.getByTestId('run-data-input').textContent ?? '')).toEqual({
      input: { items: ['apple', 'pear'] },
      work: 'appleapple',
      loop: { item: 'apple', index: 0, count: 2 },
    });
  });
});
