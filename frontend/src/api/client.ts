/** fetch wrapper: JSON in and out, the CSRF header on unsafe requests, errors as ApiError. */
import type { Problem } from './types';

const CSRF_COOKIE = 'flowdeck_csrf';
const CSRF_HEADER = 'X-CSRF-Token';

let csrfToken: string | null = null;
let onUnauthorized: (() => void) | null = null;

export function setCsrfToken(token: string | null | undefined): void {
  csrfToken = token ?? null;
}

export function setUnauthorizedHandler(handler: (() => void) | null): void {
  onUnauthorized = handler;
}

function cookie(name: string): string | null {
  for (const part of document.cookie.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return decodeURIComponent(rest.join('='));
  }
  return null;
}

function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && 'code' in value && 'message' in value;
}

export class ApiError extends Error {
  readonly status: number;
  readonly detail: string;
  readonly extra: unknown;

  constructor(status: number, detail: string, extra: unknown) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.detail = detail;
    this.extra = extra;
  }

  /** Validation problems a 400 carries in `extra` (SPEC §5). */
  get problems(): Problem[] {
    return Array.isArray(this.extra) ? this.extra.filter(isProblem) : [];
  }

  /** `latestVersion` of a 409 on save. */
  get latestVersion(): number | null {
    const extra = this.extra;
    if (typeof extra === 'object' && extra !== null && 'latestVersion' in extra) {
      const v = (extra as { latestVersion: unknown }).latestVersion;
      return typeof v === 'number' ? v : null;
    }
    return null;
  }
}

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export async function request<T>(method: Method, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') {
    const token = csrfToken ?? cookie(CSRF_COOKIE);
    if (token) headers[CSRF_HEADER] = token;
  }
  const init: RequestInit = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) init.body = JSON.stringify(body);
  if (signal) init.signal = signal;
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'The server cannot be reached. Is `flowdeck serve` running?', null);
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const detail =
      typeof data === 'object' && data !== null && 'detail' in data ? String((data as { detail: unknown }).detail) : response.statusText;
    const extra = typeof data === 'object' && data !== null && 'extra' in data ? (data as { extra: unknown }).extra : null;
    if (response.status === 401 && onUnauthorized && !path.startsWith('/api/auth/')) onUnauthorized();
    throw new ApiError(response.status, detail, extra);
  }
  return data as T;
}

export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}
