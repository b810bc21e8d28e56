// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { useState } from 'react';
import { MemoryRouter } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { DataQueryConfig, EditorNodeOf } from '../../graph/model';
import { DataQueryForm } from './DataQueryForm';

type Call = { method: string; url: string; body: unknown };

const ORDERS = { id: 'q-orders', name: 'Orders of a customer', dataSourceId: 'ds1', kind: 'sql', parameters: ['customer', 'constructor'], sql: 'SELECT 1', createdAt: 1, updatedAt: 1 };
const TOTALS = { id: 'q-totals', name: 'Daily totals', dataSourceId: 'ds1', kind: 'sql', parameters: [], sql: 'SELECT 2', createdAt: 1, updatedAt: 1 };
const SOURCE = { id: 'ds1', name: 'shop', kind: 'sql', config: { url: 'sqlite+aiosqlite:///shop.db' }, secrets: {}, createdAt: 1, updatedAt: 1 };

let calls: Call[];
let answers: Map<string, () => Response>;

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

beforeEach(() => {
  calls = [];
  answers = new Map([
    ['GET /api/queries', () => json(200, { items: [ORDERS, TOTALS], nextCursor: null })],
    ['GET /api/data-sources', () => json(200, { items: [SOURCE], nextCursor: null })],
  ]);
  vi.stubGlobal('fetch', async (input: string, init?: RequestInit) => {
    const method = init?.method ?? 'GET';
    const url = String(input).split('?')[0] ?? '';
    calls.push({ method, url, body: init?.body ? (JSON.parse(String(init.body)) as unknown) : undefined });
    const answer = answers.get(`${method} ${url}`);
    return answer ? answer() : json(404, { status_code: 404, detail: `${method} ${url} not mocked` });
  });
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function Harness({ initial, onConfig }: { initial: DataQueryConfig; onConfig: (config: DataQueryConfig) => void }) {
  const [config, setConfig] = useState(initial);
  const node = { id: 'q1', type: 'dataQuery', position: { x: 0, y: 0 }, data: { label: 'Query', config } } as EditorNodeOf<'dataQuery'>;
  return (
    <MemoryRouter>
      <DataQueryForm
        node={node}
        paths={['ctx.input.customer']}
        readOnly={false}
        problemAt={() => undefined}
        setConfig={(next) => {
          setConfig(next);
          onConfig(next);
        }}
      />
    </MemoryRouter>
  );
}

describe('DataQueryForm', () => {
  it('picks a saved query from a searchable list and offers its parameters as arguments', async () => {
    const configs: DataQueryConfig[] = [];
    render(<Harness initial={{ queryId: '', args: {} }} onConfig={(c) => configs.push(c)} />);
    const search = await screen.findByTestId('query-search');
    expect(screen.getAllByTestId('query-option').map((o) => o.dataset.name)).toEqual(['Orders of a customer', 'Daily totals']);

    fireEvent.change(search, { target: { value: 'order' } });
    expect(screen.getAllByTestId('query-option').map((o) => o.dataset.name)).toEqual(['Orders of a customer']);
    fireEvent.keyDown(search, { key: 'Enter' });

    expect(configs.at(-1)).toEqual({ queryId: 'q-orders', args: { customer: '', constructor: '' } });
    expect(screen.getByTestId('query-chosen').textContent).toContain('Orders of a customer');
    // `constructor` is a parameter like any other: an empty field, not Object's constructor.
    const constructorArg = screen.getByTestId('query-arg-constructor') as HTMLInputElement;
    expect(constructorArg.value).toBe('');
    fireEvent.change(screen.getByTestId('query-arg-customer'), { target: { value: '{{ ctx.input.customer }}' } });
    expect(configs.at(-1)).toEqual({ queryId: 'q-orders', args: { customer: '{{ ctx.input.customer }}', constructor: '' } });
  });

  it('keeps typed arguments when the query changes and flags those the new query does not take', async () => {
    const configs: DataQueryConfig[] = [];
    render(<Harness initial={{ queryId: 'q-totals', args: { customer: 'ann' } }} onConfig={(c) => configs.push(c)} />);
    expect((await screen.findByTestId('query-chosen')).textContent).toContain('Daily totals');
    expect(screen.getByTestId('query-arg-extra').textContent).toContain('customer');

    fireEvent.click(screen.getByTestId('query-change'));
    fireEvent.click(screen.getAllByTestId('query-option')[0] as HTMLElement);
    expect(configs.at(-1)).toEqual({ queryId: 'q-orders', args: { customer: 'ann', constructor: '' } });
    expect(screen.queryByTestId('query-arg-extra')).toBeNull();
  });

  it('says when the chosen query no longer exists', async () => {
    render(<Harness initial={{ queryId: 'q-gone', args: {} }} onConfig={() => undefined} />);
    expect((await screen.findByTestId('query-missing')).textContent).toContain('q-gone');
    expect(screen.getByTestId('query-search')).toBeTruthy();
  });

  it('writes a new query inline, shows the API’s errors on their fields, then picks it', async () => {
    const configs: DataQueryConfig[] = [];
    render(<Harness initial={{ queryId: '', args: {} }} onConfig={(c) => configs.push(c)} />);
    fireEvent.click(await screen.findByTestId('query-new-inline'));
    await waitFor(() => expect((screen.getByTestId('query-source') as HTMLSelectElement).value).toBe('ds1'));
    fireEvent.change(screen.getByTestId('query-name'), { target: { value: 'By status' } });
    fireEvent.change(screen.getByTestId('query-sql'), { target: { value: 'SELECT * FROM orders WHERE status = :status' } });
    expect((screen.getByTestId('query-parameters') as HTMLInputElement).value).toBe('status');

    answers.set('POST /api/queries', () =>
      json(400, { status_code: 400, detail: 'invalid saved query', extra: [{ path: 'sql', message: 'no such table: orders' }] }),
    );
    fireEvent.submit(screen.getByTestId('query-form'));
    expect(await screen.findByText('no such table: orders')).toBeTruthy();
    expect(configs).toEqual([]);

    const created = { ...ORDERS, id: 'q-new', name: 'By status', parameters: ['status'] };
    answers.set('POST /api/queries', () => json(201, created));
    fireEvent.submit(screen.getByTestId('query-form'));
    await waitFor(() => expect(configs.at(-1)).toEqual({ queryId: 'q-new', args: { status: '' } }));
    const post = calls.filter((c) => c.method === 'POST').at(-1);
    expect(post?.body).toEqual({ name: 'By status', dataSourceId: 'ds1', parameters: ['status'], sql: 'SELECT * FROM orders WHERE status = :status' });
    expect(screen.getByTestId('query-chosen').textContent).toContain('By status');
    expect(screen.getByTestId('query-arg-status')).toBeTruthy();
  });
});
