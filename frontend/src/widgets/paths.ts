/**
 * Path suggestions for the widget designer (docs/widgets.md "Paths": dot-separated keys, a number indexes
 * a list, "" is the whole value). Walks a run's output: object keys, and the keys of list items.
 */

export type PathKind = 'string' | 'number' | 'boolean' | 'null' | 'object' | 'list' | 'rows';
export type PathSuggestion = { path: string; kind: PathKind; sample: string };

const MAX_DEPTH = 6;
const MAX_ITEMS = 20;
const MAX_SUGGESTIONS = 300;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isRowList(value: unknown): value is Record<string, unknown>[] {
  return Array.isArray(value) && value.length > 0 && value.every(isObject);
}

function kindOf(value: unknown): PathKind {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return isRowList(value) ? 'rows' : 'list';
  if (typeof value === 'object') return 'object';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  return 'string';
}

function sampleOf(value: unknown): string {
  if (Array.isArray(value)) return `[${value.length} item${value.length === 1 ? '' : 's'}]`;
  if (isObject(value)) return `{${Object.keys(value).slice(0, 4).join(', ')}${Object.keys(value).length > 4 ? ', …' : ''}}`;
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

export function joinPath(base: string, key: string | number): string {
  return base === '' ? String(key) : `${base}.${key}`;
}

/** Resolve a path in a value; undefined when it does not exist. */
export function resolvePath(value: unknown, path: string): unknown {
  if (path === '') return value;
  let current: unknown = value;
  for (const part of path.split('.')) {
    if (Array.isArray(current) && /^\d+$/.test(part)) current = current[Number(part)];
    else if (isObject(current) && Object.prototype.hasOwnProperty.call(current, part)) current = current[part];
    else return undefined;
  }
  return current;
}

/**
 * Every path in a value, depth first: object keys, list indexes (only `0` of a list, to keep it short) and,
 * for a list of objects, the list itself as kind "rows". The whole value "" comes first.
 */
export function suggestPaths(value: unknown): PathSuggestion[] {
  const out: PathSuggestion[] = [];
  const walk = (v: unknown, path: string, depth: number) => {
    if (out.length >= MAX_SUGGESTIONS) return;
    out.push({ path, kind: kindOf(v), sample: sampleOf(v) });
    if (depth >= MAX_DEPTH) return;
    if (Array.isArray(v)) {
      if (v.length > 0) walk(v[0], joinPath(path, 0), depth + 1);
    } else if (isObject(v)) {
      for (const [key, child] of Object.entries(v)) {
        if (key.includes('.')) continue; // not addressable with dot paths
        walk(child, joinPath(path, key), depth + 1);
      }
    }
  };
  walk(value, '', 0);
  return out;
}

/** Paths of lists of objects (candidates for `rowsPath`). */
export function suggestRowsPaths(value: unknown): PathSuggestion[] {
  return suggestPaths(value).filter((s) => s.kind === 'rows');
}

/**
 * Paths inside each row of the list at `rowsPath` (for columns, labels, series): the union of the keys of the
 * first rows, nested objects as dotted paths. Empty when `rowsPath` is not a list of objects.
 */
export function suggestRowPaths(value: unknown, rowsPath: string): PathSuggestion[] {
  const rows = resolvePath(value, rowsPath);
  if (!isRowList(rows)) return [];
  const seen = new Map<string, PathSuggestion>();
  for (const row of rows.slice(0, MAX_ITEMS)) {
    for (const s of suggestPaths(row)) {
      if (s.path === '') continue;
      const known = seen.get(s.path);
      if (!known || (known.kind === 'null' && s.kind !== 'null')) seen.set(s.path, s);
    }
  }
  return [...seen.values()];
}

/** Keep suggestions that match what the user typed (prefix of the path first, then substring). */
export function filterSuggestions(suggestions: readonly PathSuggestion[], typed: string, kinds?: readonly PathKind[]): PathSuggestion[] {
  const wanted = kinds ? suggestions.filter((s) => kinds.includes(s.kind)) : [...suggestions];
  const q = typed.trim().toLowerCase();
  if (!q) return wanted;
  const starts = wanted.filter((s) => s.path.toLowerCase().startsWith(q));
  const contains = wanted.filter((s) => !s.path.toLowerCase().startsWith(q) && s.path.toLowerCase().includes(q));
  return [...starts, ...contains];
}
