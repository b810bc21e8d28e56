/** Pure helpers of the widget designer: default configs, the config sent to the server, frame ancestors, snippets. */
import { suggestPaths, suggestRowPaths, suggestRowsPaths } from '../paths';
import type { SyncInput, WidgetMode, WidgetType } from '../types';

export type Config = Record<string, unknown>;
const SYNC_KEYS = ['waitSeconds', 'inputs'] as const;

/** The shallowest path of one of these kinds (a top-level figure rather than one inside the first row). */
function firstPath(output: unknown, kinds: string[]): string {
  const depth = (path: string) => path.split('.').length;
  const found = suggestPaths(output).filter((s) => s.path !== '' && kinds.includes(s.kind));
  return found.sort((a, b) => depth(a.path) - depth(b.path))[0]?.path ?? '';
}

/** A starting config for a type, guessed from a run's output when there is one. */
export function defaultConfig(type: WidgetType, output: unknown, mode: WidgetMode = 'replay'): Config {
  const rowsPath = suggestRowsPaths(output)[0]?.path ?? '';
  const rowKeys = suggestRowPaths(output, rowsPath);
  const rowKey = (kinds: string[]) => rowKeys.find((s) => kinds.includes(s.kind))?.path ?? '';
  let config: Config;
  switch (type) {
    case 'table':
      config = { rowsPath, columns: [{ path: '', format: 'text' }], pageSize: 25 };
      break;
    case 'chart':
      config = { chartType: 'bar', rowsPath, labelPath: rowKey(['string', 'number']), series: [{ path: rowKey(['number']) }] };
      break;
    case 'metric':
      config = { valuePath: firstPath(output, ['number']), label: 'Value', format: 'number' };
      break;
    case 'text':
      config = { path: firstPath(output, ['string']) };
      break;
    case 'json':
      config = { path: '', expandDepth: 2 };
      break;
  }
  return withMode(config, mode);
}

/** Add (sync) or drop (replay) the keys sync mode adds: the server refuses them on a replay widget. */
export function withMode(config: Config, mode: WidgetMode): Config {
  const next: Config = { ...config };
  if (mode === 'replay') {
    for (const key of SYNC_KEYS) delete next[key];
  } else {
    if (next.waitSeconds === undefined) next.waitSeconds = 10;
    if (next.inputs === undefined) next.inputs = [];
  }
  return next;
}

function withoutEmpty<T extends Record<string, unknown>>(item: T, keys: string[]): T {
  const copy: Record<string, unknown> = { ...item };
  for (const key of keys) if (copy[key] === '' || copy[key] === null || copy[key] === undefined) delete copy[key];
  return copy as T;
}

/** The config as saved: optional fields left blank are dropped (an empty label would show as an empty header). */
export function cleanConfig(type: WidgetType, mode: WidgetMode, config: Config): Config {
  let c: Config = withMode(config, mode);
  if (type === 'table') {
    c.columns = ((c.columns as Config[] | undefined) ?? []).map((col) => withoutEmpty(col, ['label', 'format']));
    if (!c.sort) delete c.sort;
  }
  if (type === 'chart') {
    c.series = ((c.series as Config[] | undefined) ?? []).map((s) => withoutEmpty(s, ['label']));
  }
  if (type === 'metric') c = withoutEmpty(c, ['unit', 'format']);
  if (mode === 'sync') {
    c.inputs = ((c.inputs as SyncInput[] | undefined) ?? []).map((i) => withoutEmpty(i as unknown as Config, ['default']));
  }
  return c;
}

/** The config for the preview of a run (GET /api/runs/{id}/widget): the type's keys only, no sync keys. */
export function previewConfig(type: WidgetType, config: Config): Config {
  return cleanConfig(type, 'replay', config);
}

/** A sync input's default typed from the text field; undefined when blank; throws on bad JSON. */
export function parseDefault(type: SyncInput['type'], text: string): unknown {
  if (text.trim() === '') return undefined;
  if (type === 'number') {
    const n = Number(text);
    if (!Number.isFinite(n)) throw new Error(`"${text}" is not a number`);
    return n;
  }
  if (type === 'boolean') {
    if (/^(true|1|yes|on)$/i.test(text.trim())) return true;
    if (/^(false|0|no|off)$/i.test(text.trim())) return false;
    throw new Error(`"${text}" is not true or false`);
  }
  if (type === 'json') return JSON.parse(text) as unknown;
  return text;
}

/**
 * Frame ancestors from a text area (one per line, or separated by spaces/commas): null when blank (any site).
 * Returns the origins and, separately, entries that are not an origin or 'self'.
 */
export function parseFrameAncestors(text: string): { value: string[] | null; invalid: string[] } {
  const parts = text
    .split(/[\s,]+/)
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length === 0) return { value: null, invalid: [] };
  const invalid: string[] = [];
  const value: string[] = [];
  for (const part of parts) {
    if (part === "'self'" || part === 'self') {
      value.push("'self'");
      continue;
    }
    try {
      const url = new URL(part);
      if ((url.protocol !== 'http:' && url.protocol !== 'https:') || (url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
        invalid.push(part);
      } else {
        value.push(url.origin);
      }
    } catch {
      invalid.push(part);
    }
  }
  return { value: [...new Set(value)], invalid };
}

export function formatFrameAncestors(value: string[] | null | undefined): string {
  return (value ?? []).join('\n');
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

/** The iframe snippet for an embed URL (absolute, on the server's origin). */
export function iframeSnippet(origin: string, url: string, title: string): string {
  const src = new URL(url, origin).href;
  return `<iframe src="${escapeAttribute(src)}" title="${escapeAttribute(title)}" width="600" height="400" style="border:0" loading="lazy" referrerpolicy="no-referrer"></iframe>`;
}
