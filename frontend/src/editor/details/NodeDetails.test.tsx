// @vitest-environment happy-dom
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { DefinitionJson } from '../../graph/convert';
import type { RunAction } from '../../runs/runReducer';
import { createEditorStore, type EditorStore } from '../editorStore';
import { EditorStoreProvider } from '../storeContext';
import { PATH_MIME } from './fieldInsert';
import { NodeDetails } from './NodeDetails';
import type { NodeDetail } from './useNodeDetail';

/** start -> each (loop over ctx.input.items) -> shout in the body; each -> end on done. */
const LOOP: DefinitionJson = {
  title: 'Fruit',
  nodes: [
    { id: 'start', type: 'start', label: 'Start', position: { x: 0, y: 0 }, config: {} },
    { id: 'each', type: 'loop', label: 'Each', position: { x: 200, y: 0 }, config: { items: '' } },
    {
      id: 'shout',
      type: 'python',
      label: 'Shout',
      position: { x: 400, y: 0 },
      config: { code: "return ctx['loop']['item'].upper()" },
      retry: { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 60 },
    },
    { id: 'end', type: 'end', label: 'End', position: { x: 400, y: 200 }, config: { outputParameters: {} } },
  ],
  edges: [
    { id: 'a', source: 'start', target: 'each', sourceHandle: 'default' },
    { id: 'b', source: 'each', target: 'shout', sourceHandle: 'loop' },
    { id: 'c', source: 'each', target: 'end', sourceHandle: 'done' },
  ],
};

const ITEMS = ['apple', 'pear'];
const INPUT = { items: ITEMS };

const done = (attempt: number, output: unknown, status: 'COMPLETED' | 'FAILED' = 'COMPLETED') => ({
  status,
  attempt,
  attemptInRetry: attempt,
  startedAt: 1,
  completedAt: 2,
  output,
  error: status === 'FAILED' ? 'boom' : null,
});

const RUN: RunAction = {
  kind: 'detail',
  detail: {
    instanceId: 'r1',
    workflowId: 'w1',
    version: 1,
    isTest: true,
    status: 'COMPLETED',
    trigger: 'test',
    error: null,
    createdAt: 1,
    startedAt: 1,
    completedAt: 2,
    slaBreachedAt: null,
    parentInstanceId: null,
    input: INPUT,
    output: {},
    nodes: {
      start: done(1, { started: true }),
      each: done(1, { items: ['APPLE', 'PEAR'], count: 2 }),
      shout: { ...done(2, null), iterations: { '0': done(1, 'APPLE'), '1': done(2, 'PEAR') } },
      end: { ...done(2, {}), attemptInRetry: 1, retry: 1 }, // failed, then ran again by a partial retry
    },
  },
};

/** What the server answers for GET /api/runs/r1/nodes/{id}?iteration=&attempt=. */
function answer(nodeId: string, iteration: string, attempt: number | null): NodeDetail {
  if (nodeId === 'each') {
    return {
      nodeId,
      iteration,
      attempt: 1,
      status: 'COMPLETED',
      attempts: [{ attempt: 1, status: 'COMPLETED', startedAt: 1, completedAt: 2 }],
      input: { input: INPUT, start: { started: true } },
      reads: ['input'],
      config: { items: '' },
      output: { items: ['APPLE', 'PEAR'], count: 2 },
      error: null,
      logs: null,
      pinned: false,
    };
  }
  if (nodeId === 'end') {
    const attempts = [
      { attempt: 1, status: 'FAILED' as const, startedAt: 1, completedAt: 2, error: 'boom', retry: 0, attemptInRetry: 1 },
      { attempt: 2, status: 'COMPLETED' as const, startedAt: 3, completedAt: 4, retry: 1, attemptInRetry: 1 },
    ];
    const shown = attempt ?? 2;
    return {
      nodeId,
      iteration,
      attempt: shown,
      status: shown === 1 ? 'FAILED' : 'COMPLETED',
      attempts,
      input: { input: INPUT },
      reads: [],
      config: { outputParameters: {} },
      output: shown === 1 ? null : {},
      error: shown === 1 ? 'boom' : null,
      logs: null,
      pinned: false,
    };
  }
  const index = Number(iteration);
  const item = ITEMS[index] ?? '';
  const attempts =
    index === 1
      ? [
          { attempt: 1, status: 'FAILED' as const, startedAt: 1, completedAt: 2, error: 'flaky: try again' },
          { attempt: 2, status: 'COMPLETED' as const, startedAt: 3, completedAt: 4 },
        ]
      : [{ attempt: 1, status: 'COMPLETED' as const, startedAt: 1, completedAt: 2 }];
  const shown = attempt ?? attempts.length;
  const failed = index === 1 && shown === 1;
  return {
    nodeId,
    iteration,
    attempt: shown,
    status: failed ? 'FAILED' : 'COMPLETED',
    attempts,
    input: { input: INPUT, start: { started: true }, loop: { item, index, count: 2 } },
    reads: ['loop'],
    config: LOOP.nodes[2]?.config ?? {},
    output: failed ? null : item.toUpperCase(),
    error: failed ? 'flaky: try again' : null,
    logs: null,
    pinned: false,
  };
}

let calls: string[] = [];

beforeEach(() => {
  calls = [];
  vi.stubGlobal('fetch', async (request: string) => {
    const url = new URL(String(request), 'http://flowdeck.test');
    calls.push(`${url.pathname}${url.search}`);
    const match = /^\/api\/runs\/r1\/nodes\/([^/]+)$/.exec(url.pathname);
    const body = match?.[1]
      ? answer(decodeURIComponent(match[1]), url.searchParams.get('iteration') ?? '', url.searchParams.has('attempt') ? Number(url.searchParams.get('attempt')) : null)
      : { value: null };
    return new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } });
  });
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function open(nodeId: string): EditorStore {
  const store = createEditorStore();
  store.getState().load({ workflowId: 'w1', version: 1, title: 'Fruit', description: null, options: null }, LOOP);
  store.getState().dispatchRun(RUN);
  store.getState().openDetails(nodeId);
  render(
    <EditorStoreProvider store={store}>
      <NodeDetails />
    </EditorStoreProvider>,
  );
  return store;
}

const inputSide = () => screen.getByTestId('ndv-input-side');

describe('the node details view', () => {
  it('opens a loop body on the iteration that decides its status, with the loop item it received, as a table, JSON and a tree', async () => {
    open('shout');
    const dialog = screen.getByRole('dialog', { name: 'Shout: node details' });
    expect(within(dialog).getByTestId('ndv-iteration')).toHaveProperty('value', '0'); // all completed: the first
    await waitFor(() => expect(within(inputSide()).getByTestId('ndv-table').textContent).toContain('"item":"apple"'));
    expect(calls).toContain('/api/runs/r1/nodes/shout?iteration=0');
    expect(screen.getByTestId('ndv-reads').textContent).toContain('ctx.loop');
    // the key it reads comes first and is marked
    const firstKey = within(inputSide()).getAllByTestId('ndv-path')[0];
    expect(firstKey?.getAttribute('data-path')).toBe('ctx.loop');
    expect(firstKey?.textContent).toContain('read');

    fireEvent.click(screen.getByTestId('ndv-input-mode-json'));
    expect(JSON.parse(screen.getByTestId('ndv-input-json').textContent ?? '')).toEqual({ loop: { item: 'apple', index: 0, count: 2 }, input: INPUT, start: { started: true } });

    fireEvent.click(screen.getByTestId('ndv-input-mode-tree'));
    const tree = screen.getByRole('tree', { name: 'Input' });
    const loop = within(tree).getAllByRole('treeitem')[0];
    expect(loop?.getAttribute('aria-expanded')).toBe('true');
    const item = within(tree).getAllByTestId('ndv-path').find((el) => el.getAttribute('data-path') === 'ctx.loop.item');
    expect(item?.parentElement?.textContent).toContain('apple');
    fireEvent.click(within(tree).getByRole('button', { name: 'Collapse loop' }));
    expect(loop?.getAttribute('aria-expanded')).toBe('false');

    expect(screen.getByTestId('ndv-output-json').textContent).toBe('"APPLE"');
  });

  it('switches iteration and attempt, each read from the server', async () => {
    open('shout');
    await waitFor(() => expect(screen.getByTestId('ndv-output-json').textContent).toBe('"APPLE"'));
    expect(screen.queryByTestId('ndv-attempt')).toBeNull(); // one attempt there: nothing to pick
    expect(screen.getByTestId('ndv-attempt-label').textContent).toBe('attempt 1 of 3');
    fireEvent.change(screen.getByTestId('ndv-iteration'), { target: { value: '1' } });
    await waitFor(() => expect(screen.getByTestId('ndv-attempt')).toHaveProperty('value', '2'));
    expect(calls).toContain('/api/runs/r1/nodes/shout?iteration=1');
    expect(screen.getByTestId('ndv-attempt-label').textContent).toBe('attempt 2 of 3');
    fireEvent.change(screen.getByTestId('ndv-attempt'), { target: { value: '1' } });
    await waitFor(() => expect(screen.getByTestId('ndv-error').textContent).toBe('flaky: try again'));
    expect(calls).toContain('/api/runs/r1/nodes/shout?iteration=1&attempt=1');
    expect(screen.getByTestId('ndv-status').getAttribute('data-status')).toBe('FAILED');

    expect(screen.getByTestId('ndv-output').textContent).toContain('null');
  });

  it('counts attempts within each partial retry, in the picker and the label alike', async () => {
    open('end');
    await waitFor(() => expect(screen.getByTestId('ndv-attempt')).toHaveProperty('value', '2'));
    const options = [...screen.getByTestId('ndv-attempt').querySelectorAll('option')].map((o) => o.textContent);
    expect(options).toEqual(['1 of 3 · failed · 1.00 s', '1 of 3, retry 1 · completed · 1.00 s']);
    expect(screen.getByTestId('ndv-attempt-label').textContent).toBe('attempt 1 of 3, retry 1');
    fireEvent.change(screen.getByTestId('ndv-attempt'), { target: { value: '1' } });
    await waitFor(() => expect(screen.getByTestId('ndv-error').textContent).toBe('boom'));
    expect(screen.getByTestId('ndv-attempt-label').textContent).toBe('attempt 1 of 3');
  });

  it('writes a dragged input field into a template parameter as {{ ctx.… }}', async () => {
    const store = open('each');
    await waitFor(() => expect(within(inputSide()).getAllByTestId('ndv-path').length).toBeGreaterThan(0));
    fireEvent.click(screen.getByTestId('ndv-input-mode-tree'));
    const items = within(inputSide()).getAllByTestId('ndv-path').find((el) => el.getAttribute('data-path') === 'ctx.input.items');
    if (!items) throw new Error('no ctx.input.items in the tree');
    const data = new Map<string, string>();
    const dataTransfer = { setData: (t: string, v: string) => data.set(t, v), getData: (t: string) => data.get(t) ?? '', types: [] as string[], effectAllowed: '', dropEffect: '' };
    fireEvent.dragStart(items, { dataTransfer });
    expect(data.get(PATH_MIME)).toBe('ctx.input.items');
    expect(data.get('text/plain')).toBe("ctx['input']['items']"); // what a drop into code inserts
    dataTransfer.types = [...data.keys()];
    const field = screen.getByTestId('loop-items');
    fireEvent.dragOver(field, { dataTransfer });
    fireEvent.drop(field, { dataTransfer });
    const each = () => store.getState().nodes.find((n) => n.id === 'each');
    expect(each()?.data.config).toMatchObject({ items: '{{ ctx.input.items }}' });
  });

  it('writes a field with the keyboard into the parameter last used, and closes on Escape', async () => {
    const store = open('each');
    await waitFor(() => expect(within(inputSide()).getAllByTestId('ndv-path').length).toBeGreaterThan(0));
    const field = screen.getByTestId('loop-items');
    act(() => field.focus());
    fireEvent.focus(field);
    const input = within(inputSide()).getAllByTestId('ndv-path').find((el) => el.getAttribute('data-path') === 'ctx.input');
    if (!input) throw new Error('no ctx.input row');
    fireEvent.keyDown(input, { key: 'Enter' });
    expect(store.getState().nodes.find((n) => n.id === 'each')?.data.config).toMatchObject({ items: '{{ ctx.input }}' });

    fireEvent.keyDown(screen.getByRole('dialog'), { key: 'Escape' });
    expect(store.getState().detailsNodeId).toBeNull();
    expect(store.getState().inspectorNodeId).toBe('each'); // the node stays open in the side panel
    expect(screen.queryByRole('dialog')).toBeNull();
  });

  it('says what to do before any run, and shows the parameters to edit', () => {
    const store = createEditorStore();
    store.getState().load({ workflowId: 'w1', version: 1, title: 'Fruit', description: null, options: null }, LOOP);
    store.getState().openDetails('each');
    render(
      <EditorStoreProvider store={store}>
        <NodeDetails />
      </EditorStoreProvider>,
    );
    expect(screen.getAllByTestId('ndv-no-data')[0]?.textContent).toContain('Test run');
    expect(screen.getByTestId('loop-items')).toBeTruthy();
    expect(calls).toEqual([]);
  });
});
