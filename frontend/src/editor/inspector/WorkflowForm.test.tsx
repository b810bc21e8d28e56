// @vitest-environment happy-dom
import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { useState } from 'react';
import { MemoryRouter } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { EditorNodeOf, WorkflowConfig } from '../../graph/model';
import { forgetWorkflowTitles } from '../workflowTitles';
import { inputFor, WorkflowForm } from './WorkflowForm';

type Call = { method: string; url: string; search: URLSearchParams };

function summary(id: string, title: string, version = 1) {
  return { id, title, description: null, version, createdAt: 1, updatedAt: 1 };
}
const CUSTOMER = summary('wf-customer', 'Enrich customer', 3);
const INVOICE = summary('wf-invoice', 'Send invoice', 1);
const SELF = summary('wf-self', 'The parent itself', 1);
const ALL = [CUSTOMER, INVOICE, SELF];

function full(w: ReturnType<typeof summary>, inputs: string[]) {
  return { ...w, options: null, nodes: [], edges: [], inputs };
}

let calls: Call[];
let answers: Map<string, (search: URLSearchParams) => Response>;

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

beforeEach(() => {
  forgetWorkflowTitles();
  calls = [];
  answers = new Map([
    [
      'GET /api/workflows',
      (search) => {
        const q = (search.get('q') ?? '').toLowerCase();
        return json(200, { items: ALL.filter((w) => w.title.toLowerCase().includes(q)), nextCursor: null });
      },
    ],
    ['GET /api/workflows/wf-customer', () => json(200, full(CUSTOMER, ['constructor', 'customerId', 'email']))],
    ['GET /api/workflows/wf-invoice', () => json(200, full(INVOICE, ['amount']))],
    [
      'GET /api/workflows/wf-customer/versions',
      () =>
        json(200, {
          items: [
            { version: 3, title: 'Enrich customer', createdAt: 30 },
            { version: 2, title: 'Enrich customer', createdAt: 20 },
            { version: 1, title: 'Customer (old)', createdAt: 10 },
          ],
          nextCursor: null,
        }),
    ],
    ['GET /api/workflows/wf-customer/versions/1', () => json(200, full(CUSTOMER, ['id']))],
  ]);
  vi.stubGlobal('fetch', async (input: string, init?: RequestInit) => {
    const method = init?.method ?? 'GET';
    const [url = '', qs = ''] = String(input).split('?');
    const search = new URLSearchParams(qs);
    calls.push({ method, url, search });
    const answer = answers.get(`${method} ${url}`);
    return answer ? answer(search) : json(404, { status_code: 404, detail: `${method} ${url} not found` });
  });
});

afterEach(() => {
  cleanup();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

function Harness({ initial, onConfig, readOnly = false }: { initial: WorkflowConfig; onConfig: (config: WorkflowConfig) => void; readOnly?: boolean }) {
  const [config, setConfig] = useState(initial);
  const node = { id: 'sub', type: 'workflow', position: { x: 0, y: 0 }, data: { label: 'Sub', config } } as EditorNodeOf<'workflow'>;
  return (
    <MemoryRouter>
      <WorkflowForm
        node={node}
        paths={['ctx.input.id']}
        readOnly={readOnly}
        problemAt={() => undefined}
        currentWorkflowId="wf-self"
        setConfig={(next) => {
          setConfig(next);
          onConfig(next);
        }}
      />
    </MemoryRouter>
  );
}

const titles = () => screen.queryAllByTestId('workflow-option').map((o) => o.dataset.title);

describe('WorkflowForm', () => {
  it('searches the workflows by title as one types, and picks one with the keyboard', async () => {
    const configs: WorkflowConfig[] = [];
    render(<Harness initial={{ workflowId: '', input: {} }} onConfig={(c) => configs.push(c)} />);
    // The workflow being edited ('The parent itself') is never offered: it would call itself.
    await waitFor(() => expect(titles()).toEqual(['Enrich customer', 'Send invoice']));

    const search = screen.getByTestId('workflow-search');
    fireEvent.change(search, { target: { value: 'INV' } });
    expect(titles()).toEqual(['Send invoice']); // filtered at once, before the API answers
    await waitFor(() => expect(calls.some((c) => c.url === '/api/workflows' && c.search.get('q') === 'INV')).toBe(true));

    fireEvent.change(search, { target: { value: 'e' } });
    await waitFor(() => expect(titles()).toEqual(['Enrich customer', 'Send invoice']));
    fireEvent.keyDown(search, { key: 'ArrowDown' });
    expect(screen.getAllByTestId('workflow-option')[1]?.getAttribute('aria-selected')).toBe('true');
    fireEvent.keyDown(search, { key: 'ArrowUp' });
    fireEvent.keyDown(search, { key: 'Enter' });

    await waitFor(() => expect(configs.at(-1)).toEqual({ workflowId: 'wf-customer', input: { constructor: '', customerId: '', email: '' } }));
    expect(configs).toHaveLength(1); // one change, so one undo step
    expect((await screen.findByTestId('workflow-chosen')).textContent).toContain('Enrich customer');
    expect(screen.getByTestId('workflow-open').getAttribute('href')).toBe('/workflows/wf-customer');
  });

  it('debounces the search: one request for a burst of typing', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    render(<Harness initial={{ workflowId: '', input: {} }} onConfig={() => undefined} />);
    const search = screen.getByTestId('workflow-search');
    for (const text of ['s', 'se', 'sen', 'send']) fireEvent.change(search, { target: { value: text } });
    await act(async () => {
      await vi.advanceTimersByTimeAsync(500);
    });
    const searched = calls.filter((c) => c.url === '/api/workflows' && c.search.has('q')).map((c) => c.search.get('q'));
    expect(searched).toEqual(['send']);
  });

  it('shows one template field per input of the workflow and keeps other keys editable and removable', async () => {
    const configs: WorkflowConfig[] = [];
    render(<Harness initial={{ workflowId: 'wf-customer', input: { customerId: '{{ ctx.input.id }}', legacy: '7' } }} onConfig={(c) => configs.push(c)} />);
    expect((await screen.findByTestId('workflow-chosen')).textContent).toContain('Enrich customer');
    expect((screen.getByTestId('workflow-arg-customerId') as HTMLInputElement).value).toBe('{{ ctx.input.id }}');
    // `constructor` is an input like any other: an empty field, not Object's constructor.
    expect((screen.getByTestId('workflow-arg-constructor') as HTMLInputElement).value).toBe('');
    expect(screen.getByTestId('workflow-arg-email')).toBeTruthy();

    fireEvent.change(screen.getByTestId('workflow-arg-email'), { target: { value: '{{ ctx.lookup.email }}' } });
    expect(configs.at(-1)).toEqual({ workflowId: 'wf-customer', input: { customerId: '{{ ctx.input.id }}', legacy: '7', email: '{{ ctx.lookup.email }}' } });

    const extra = screen.getByTestId('workflow-arg-extra');
    expect((extra.querySelector('input[aria-label="name"]') as HTMLInputElement).value).toBe('legacy');
    fireEvent.change(extra.querySelector('input[aria-label="value of legacy"]') as HTMLInputElement, { target: { value: '8' } });
    expect(configs.at(-1)?.input.legacy).toBe('8');
    fireEvent.click(screen.getByRole('button', { name: 'Remove legacy' }));
    expect(configs.at(-1)).toEqual({ workflowId: 'wf-customer', input: { customerId: '{{ ctx.input.id }}', email: '{{ ctx.lookup.email }}' } });
    fireEvent.click(screen.getByTestId('workflow-arg-add'));
    expect(configs.at(-1)?.input).toEqual({ customerId: '{{ ctx.input.id }}', email: '{{ ctx.lookup.email }}', param1: '' });
  });

  it('runs the latest version by default, or a fixed one whose inputs it then shows', async () => {
    const configs: WorkflowConfig[] = [];
    render(<Harness initial={{ workflowId: 'wf-customer', input: {} }} onConfig={(c) => configs.push(c)} />);
    const select = (await screen.findByTestId('called-version')) as HTMLSelectElement;
    await waitFor(() => expect(select.options).toHaveLength(4));
    expect(select.value).toBe('');
    expect(select.options[0]?.textContent).toBe('Latest (when the node starts)');
    expect(select.options[3]?.textContent).toContain('v1 · Customer (old)');

    fireEvent.change(select, { target: { value: '1' } });
    expect(configs.at(-1)).toEqual({ workflowId: 'wf-customer', input: {}, version: 1 });
    expect(await screen.findByTestId('workflow-arg-id')).toBeTruthy();
    expect(screen.queryByTestId('workflow-arg-email')).toBeNull();

    fireEvent.change(select, { target: { value: '' } });
    expect(configs.at(-1)).toEqual({ workflowId: 'wf-customer', input: {} });
    expect(await screen.findByTestId('workflow-arg-email')).toBeTruthy();
  });

  it('changes the workflow, keeping what was typed, and forgets a fixed version', async () => {
    const configs: WorkflowConfig[] = [];
    render(<Harness initial={{ workflowId: 'wf-customer', version: 2, input: { customerId: 'c1', email: '' } }} onConfig={(c) => configs.push(c)} />);
    fireEvent.click(await screen.findByTestId('workflow-change'));
    await waitFor(() => expect(titles()).toContain('Send invoice'));
    fireEvent.click(screen.getAllByTestId('workflow-option')[1] as HTMLElement);
    await waitFor(() => expect(configs.at(-1)).toEqual({ workflowId: 'wf-invoice', input: { amount: '', customerId: 'c1' } }));
  });

  it('says when the picked workflow no longer exists and offers the list again', async () => {
    render(<Harness initial={{ workflowId: 'wf-gone', input: { a: '1' } }} onConfig={() => undefined} />);
    expect((await screen.findByTestId('workflow-missing')).textContent).toContain('wf-gone');
    expect(screen.getByTestId('workflow-search')).toBeTruthy();
    expect(screen.queryByTestId('workflow-chosen')).toBeNull();
  });

  it('marks a node that calls its own workflow', async () => {
    answers.set('GET /api/workflows/wf-self', () => json(200, full(SELF, [])));
    render(<Harness initial={{ workflowId: 'wf-self', input: {} }} onConfig={() => undefined} />);
    expect(await screen.findByTestId('workflow-self')).toBeTruthy();
  });

  it('is read-only in a run view', async () => {
    render(<Harness readOnly initial={{ workflowId: 'wf-customer', input: { customerId: 'c1' } }} onConfig={() => undefined} />);
    expect((await screen.findByTestId('workflow-chosen')).textContent).toContain('Enrich customer');
    expect(screen.queryByTestId('workflow-change')).toBeNull();
    expect(screen.queryByTestId('workflow-search')).toBeNull();
    expect((screen.getByTestId('called-version') as HTMLSelectElement).disabled).toBe(true);
  });
});

describe('inputFor', () => {
  it('gives a field per input, keeps typed values and drops empty extras', () => {
    expect(inputFor(['a', 'b'], { b: 'x', c: '', d: 'y' })).toEqual({ a: '', b: 'x', d: 'y' });
    expect(Object.getPrototypeOf(inputFor(['__proto__'], {}))).toBe(Object.prototype);
  });
});
