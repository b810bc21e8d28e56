/** The embed page's HTTP calls: same origin as the page, no cookies, no CSRF (the token in the path is the credential). */
import type { WidgetAnswer } from '../widgets/types';

export class EmbedError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** The token from `/embed/<token>` (or `/embed/<token>/…`). */
export function tokenFromPath(pathname: string): string | null {
  const m = /^\/embed\/([^/?#]+)/.exec(pathname);
  return m?.[1] ? decodeURIComponent(m[1]) : null;
}

async function getJson(url: string, signal?: AbortSignal): Promise<WidgetAnswer> {
  let response: Response;
  try {
    response = await fetch(url, { credentials: 'omit', headers: { Accept: 'application/json' }, cache: 'no-store', ...(signal ? { signal } : {}) });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new EmbedError(0, 'The server cannot be reached.');
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    const detail = typeof body === 'object' && body !== null && 'detail' in body ? String((body as { detail: unknown }).detail) : '';
    const fallback =
      response.status === 410
        ? 'This embed link was revoked or has expired.'
        : response.status === 404
          ? 'This embed link does not exist.'
          : `The server answered ${response.status}.`;
    throw new EmbedError(response.status, detail || fallback);
  }
  return body as WidgetAnswer;
}

const base = (token: string) => `/embed/${encodeURIComponent(token)}`;

/** The widget's data; the page's own query string feeds sync inputs. */
export const fetchData = (token: string, search: string, signal?: AbortSignal) => getJson(`${base(token)}/data${search}`, signal);
/** A run of the widget's workflow, once a sync page followed it to the end. */
export const fetchRun = (token: string, runId: string, signal?: AbortSignal) =>
  getJson(`${base(token)}/runs/${encodeURIComponent(runId)}`, signal);
