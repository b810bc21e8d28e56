// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { DataSource } from './api';
import { DataSourceForm } from './DataSourceForm';

const SOURCE: DataSource = {
  id: 'ds1',
  name: 'warehouse',
  kind: 'sql',
  config: { url: 'postgresql+asyncpg://reader@db.internal/wh' },
  secrets: { password: 'set' },
  createdAt: 1,
  updatedAt: 2,
};

let requests: { method: string; url: string; body: unknown }[];
let reply: (method: string, url: string) => Response;

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

beforeEach(() => {
  requests = [];
  reply = () => json(200, SOURCE);
  vi.stubGlobal('fetch', async (input: string, init?: RequestInit) => {
    const method = init?.method ?? 'GET';
    requests.push({ method, url: String(input), body: init?.body ? (JSON.parse(String(init.body)) as unknown) : undefined });
    return reply(method, String(input));
  });
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe('DataSourceForm', () => {
  it('shows a stored secret only as "set", and sends "set" back unless it is replaced', async () => {
    const saved = vi.fn();
    render(<DataSourceForm source={SOURCE} onSaved={saved} onCancel={() => undefined} />);
    expect(screen.getByTestId('secret-set').textContent).toBe('set');
    expect(screen.queryByTestId('secret-value')).toBeNull(); // no field holds the secret

    fireEvent.submit(screen.getByTestId('data-source-form'));
    await waitFor(() => expect(saved).toHaveBeenCalled());
    expect(requests.at(-1)).toMatchObject({ method: 'PUT', url: '/api/data-sources/ds1', body: { secrets: { password: 'set' } } });

    fireEvent.click(screen.getByTestId('secret-replace'));
    fireEvent.change(screen.getByTestId('secret-value'), { target: { value: 'n3w-pass' } });
    fireEvent.submit(screen.getByTestId('data-source-form'));
    await waitFor(() => expect(requests.at(-1)?.body).toMatchObject({ secrets: { password: 'n3w-pass' } }));
  });

  it('tests the stored source when nothing changed, and the form (without kept secrets) when it points elsewhere', async () => {
    reply = () => json(200, { ok: true, message: 'connected', latencyMs: 3.2 });
    render(<DataSourceForm source={SOURCE} onSaved={() => undefined} onCancel={() => undefined} />);
    fireEvent.click(screen.getByTestId('connection-test'));
    expect((await screen.findByTestId('connection-result')).dataset.ok).toBe('true');
    expect(requests.at(-1)).toMatchObject({ method: 'POST', url: '/api/data-sources/ds1/test' });

    fireEvent.change(screen.getByTestId('source-url'), { target: { value: 'postgresql+asyncpg://reader@elsewhere/wh' } });
    fireEvent.click(screen.getByTestId('connection-test'));
    await waitFor(() => expect(requests.at(-1)?.url).toBe('/api/data-sources/test'));
    expect(requests.at(-1)?.body).toEqual({
      name: 'warehouse',
      kind: 'sql',
      config: { url: 'postgresql+asyncpg://reader@elsewhere/wh' },
      secrets: {},
    });
  });

  it('puts the API’s errors on the fields they name', async () => {
    reply = () =>
      json(400, {
        status_code: 400,
        detail: 'invalid data source',
        extra: [
          { path: 'config.url', message: 'put the password in secrets.password, not in the URL' },
          { path: 'name', message: 'name must be a non-empty string' },
        ],
      });
    render(<DataSourceForm source={null} onSaved={() => undefined} onCancel={() => undefined} />);
    fireEvent.submit(screen.getByTestId('data-source-form'));
    const urlField = (await screen.findByText('put the password in secrets.password, not in the URL')).closest('.field');
    expect(urlField?.querySelector('[data-testid="source-url"]')).toBeTruthy();
    const nameField = screen.getByText('name must be a non-empty string').closest('.field');
    expect(nameField?.querySelector('[data-testid="source-name"]')).toBeTruthy();
    expect(screen.queryByTestId('form-error')).toBeNull();
  });

  it('says which directories SQLite files may be in before anything is saved', async () => {
    reply = (_method, url) => (url === '/api/data-sources/rules' ? json(200, { sqliteDirectories: ['/srv/data', '/mnt/shared'] }) : json(200, SOURCE));
    render(<DataSourceForm source={null} onSaved={() => undefined} onCancel={() => undefined} />);
    const hint = await screen.findByTestId('sqlite-dirs');
    expect(hint.textContent).toContain('only inside /srv/data, /mnt/shared');
    expect(screen.getByText('sqlite+aiosqlite:////srv/data/orders.db')).toBeTruthy();
  });

  it('says when this server allows no SQLite files at all', async () => {
    reply = (_method, url) => (url === '/api/data-sources/rules' ? json(200, { sqliteDirectories: [] }) : json(200, SOURCE));
    render(<DataSourceForm source={null} onSaved={() => undefined} onCancel={() => undefined} />);
    expect((await screen.findByTestId('sqlite-dirs')).textContent).toContain('not allowed on this server');
  });
});
