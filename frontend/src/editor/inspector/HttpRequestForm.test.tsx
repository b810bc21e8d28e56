// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { useState } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { defaultConfig, type EditorNodeOf, type HttpConfig } from '../../graph/model';
import { HttpRequestForm } from './HttpRequestForm';

const API = { id: 'ds-api', name: 'shop api', kind: 'http', config: { baseUrl: 'https://shop.example/v2' }, secrets: { Authorization: 'set' }, createdAt: 1, updatedAt: 1 };
const DB = { id: 'ds-db', name: 'warehouse', kind: 'sql', config: { url: 'sqlite+aiosqlite:///w.db' }, secrets: {}, createdAt: 1, updatedAt: 1 };

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

beforeEach(() => {
  vi.stubGlobal('fetch', async (input: string) => {
    const url = String(input).split('?')[0] ?? '';
    return url === '/api/data-sources' ? json(200, { items: [API, DB], nextCursor: null }) : json(404, { status_code: 404, detail: 'not mocked' });
  });
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function Harness({ initial, seen, problems = {} }: { initial: HttpConfig; seen: HttpConfig[]; problems?: Record<string, string> }) {
  const [config, setConfig] = useState(initial);
  const node = { id: 'h1', type: 'http', position: { x: 0, y: 0 }, data: { label: 'HTTP request', config } } as EditorNodeOf<'http'>;
  return (
    <HttpRequestForm
      node={node}
      paths={['ctx.input.id']}
      readOnly={false}
      problemAt={(path) => problems[path]}
      setConfig={(next) => {
        setConfig(next);
        seen.push(next);
      }}
    />
  );
}

function last(seen: HttpConfig[]): HttpConfig {
  const config = seen.at(-1);
  if (!config) throw new Error('nothing was set');
  return config;
}

describe('HttpRequestForm', () => {
  it('edits method, URL, query, headers, timeout and the status rule', async () => {
    const seen: HttpConfig[] = [];
    render(<Harness initial={defaultConfig('http')} seen={seen} />);
    fireEvent.change(screen.getByTestId('http-method'), { target: { value: 'POST' } });
    fireEvent.change(screen.getByTestId('http-url'), { target: { value: 'https://api.example/orders/{{ ctx.input.id }}' } });
    expect(last(seen)).toMatchObject({ method: 'POST', url: 'https://api.example/orders/{{ ctx.input.id }}' });
    fireEvent.click(screen.getByTestId('http-query-add'));
    const query = screen.getByTestId('http-query');
    fireEvent.change(within(query).getByLabelText('name'), { target: { value: 'limit' } });
    fireEvent.change(within(query).getByLabelText('value of limit'), { target: { value: '10' } });
    fireEvent.click(screen.getByTestId('http-headers-add'));
    const headers = screen.getByTestId('http-headers');
    fireEvent.change(within(headers).getByLabelText('name'), { target: { value: 'X-Trace' } });
    fireEvent.change(screen.getByTestId('http-timeout'), { target: { value: '5' } });
    fireEvent.change(screen.getByTestId('http-fail-on-status'), { target: { value: 'keep' } });
    expect(last(seen)).toEqual({
      method: 'POST',
      url: 'https://api.example/orders/{{ ctx.input.id }}',
      query: { limit: '10' },
      headers: { 'X-Trace': '' },
      timeoutSeconds: 5,
      failOnStatus: false,
    });
    fireEvent.change(screen.getByTestId('http-fail-on-status'), { target: { value: 'fail' } });
    expect(last(seen)).not.toHaveProperty('failOnStatus');
  });

  it('offers only HTTP data sources and says the URL is a path on the base URL', async () => {
    const seen: HttpConfig[] = [];
    render(<Harness initial={defaultConfig('http')} seen={seen} />);
    await waitFor(() => expect(screen.getByRole('option', { name: 'shop api' })).toBeTruthy());
    expect(screen.queryByRole('option', { name: 'warehouse' })).toBeNull();
    fireEvent.change(screen.getByTestId('http-source'), { target: { value: 'ds-api' } });
    expect(last(seen).dataSourceId).toBe('ds-api');
    expect(screen.getByText(/A path on https:\/\/shop\.example\/v2/)).toBeTruthy();
    fireEvent.change(screen.getByTestId('http-source'), { target: { value: '' } });
    expect(last(seen)).not.toHaveProperty('dataSourceId');
  });

  it('keeps a JSON body as JSON, says when it is not valid yet, and sends text as written', () => {
    const seen: HttpConfig[] = [];
    render(<Harness initial={defaultConfig('http')} seen={seen} />);
    expect(screen.queryByTestId('http-body')).toBeNull();
    fireEvent.click(screen.getByTestId('http-body-json'));
    expect(last(seen).body).toEqual({});
    fireEvent.change(screen.getByTestId('http-body'), { target: { value: '{"id": "{{ ctx.input.id }}", "n": 2}' } });
    expect(last(seen).body).toEqual({ id: '{{ ctx.input.id }}', n: 2 });
    fireEvent.change(screen.getByTestId('http-body'), { target: { value: '{"id": ' } });
    expect(screen.getByText(/Not valid JSON yet/)).toBeTruthy();
    expect(last(seen).body).toEqual({ id: '{{ ctx.input.id }}', n: 2 });
    fireEvent.click(screen.getByTestId('http-body-text'));
    fireEvent.change(screen.getByTestId('http-body'), { target: { value: 'hello {{ ctx.input.id }}' } });
    expect(last(seen).body).toBe('hello {{ ctx.input.id }}');
    fireEvent.click(screen.getByTestId('http-body-none'));
    expect(last(seen)).not.toHaveProperty('body');
  });

  it('shows the server’s problem next to the URL', () => {
    render(<Harness initial={{ ...defaultConfig('http'), url: 'http://169.254.169.254/' }} seen={[]} problems={{ 'config.url': 'the URL is refused: 169.254.169.254 is a link-local address' }} />);
    expect(screen.getByText(/169\.254\.169\.254 is a link-local address/)).toBeTruthy();
  });
});
