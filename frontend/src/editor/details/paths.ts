/**
 * Paths into a node's context as templates and code write them, and the shapes the node details view draws
 * data in (a table per list of records, key/value rows per object). Pure.
 */

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `parent` extended by one key: `ctx.loop`, `ctx.rows[0]`, `ctx.input['order id']`. */
export function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  return IDENTIFIER.test(key) ? `${parent}.${key}` : `${parent}[${JSON.stringify(key).replace(/^"|"$/g, "'")}]`;
}

/** The same path as Python and Jinja2 both read it (`ctx['loop']['item']`): what a drop into code inserts. */
export function subscriptPath(path: string): string {
  return path.replace(/\.([A-Za-z_][A-Za-z0-9_]*)/g, "['$1']");
}

/**
 * `value` with `path` inserted at `at`: as `{{ path }}` in a template, bare where the caret already stands
 * inside `{{ … }}` or in an expression (a condition's, a switch case's).
 */
export function insertPath(value: string, at: number, path: string, kind: 'template' | 'expression'): { value: string; caret: number } {
  const before = value.slice(0, at);
  const insideBraces = before.lastIndexOf('{{') > before.lastIndexOf('}}');
  const text = kind === 'expression' || insideBraces ? path : `{{ ${path} }}`;
  return { value: before + text + value.slice(at), caret: at + text.length };
}

export type Cell = unknown;

/** What a table of `value` has: columns and rows of cells, or `null` when it is a single value. */
export type TableShape = { columns: string[]; rows: { key: string; path: (column: string) => string; cells: Cell[] }[] };

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const MAX_COLUMNS = 30;

/**
 * A list of records: one row per item, one column per key (the keys of all items, first seen first).
 * A list of anything else: one row per item. An object: one row per key. Anything else: no table.
 */
export function tableOf(value: unknown, root: string): TableShape | null {
  if (Array.isArray(value)) {
    if (value.length > 0 && value.every(isRecord)) {
      const columns: string[] = [];
      for (const item of value) for (const key of Object.keys(item)) if (!columns.includes(key) && columns.length < MAX_COLUMNS) columns.push(key);
      return {
        columns,
        rows: value.map((item, i) => ({ key: String(i), path: (column) => childPath(childPath(root, i), column), cells: columns.map((c) => item[c]) })),
      };
    }
    return { columns: ['value'], rows: value.map((item, i) => ({ key: String(i), path: () => childPath(root, i), cells: [item] })) };
  }
  if (isRecord(value)) {
    return { columns: ['value'], rows: Object.entries(value).map(([key, v]) => ({ key, path: () => childPath(root, key), cells: [v] })) };
  }
  return null;
}

/** A cell as one line: strings as they are, anything else as JSON, long ones cut. */
export function cellText(value: unknown, limit = 120): string {
  const text = typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

/** The keys of a context, the ones the node reads first (in the order read), then the rest as they came. */
export function orderedKeys(context: Record<string, unknown>, reads: readonly string[] | null): string[] {
  const keys = Object.keys(context);
  if (!reads) return keys;
  return [...reads.filter((k) => keys.includes(k)), ...keys.filter((k) => !reads.includes(k))];
}
