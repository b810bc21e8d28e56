/** REST calls of the data pages (SPEC §5, §6): data sources, saved queries, connection tests, previews. */
import { query, request } from '../api/client';
import type { Page } from '../api/types';

export type SourceKind = 'sql' | 'http';

/** What the API answers: secret values never come back, only `{name: "set"}`. */
export type DataSource = {
  id: string;
  name: string;
  kind: SourceKind;
  config: Record<string, unknown>;
  secrets: Record<string, 'set'>;
  createdAt: number;
  updatedAt: number;
};

/** The create / update body. On update a secret sent as "set" keeps the stored value; null removes it. */
export type DataSourceBody = {
  name: string;
  kind?: SourceKind;
  config: Record<string, unknown>;
  secrets: Record<string, string | null>;
};

export type SavedQuery = {
  id: string;
  name: string;
  dataSourceId: string;
  kind: SourceKind;
  parameters: string[];
  sql?: string;
  method?: string;
  path?: string;
  query?: Record<string, unknown>;
  body?: unknown;
  headers?: Record<string, string>;
  createdAt: number;
  updatedAt: number;
};

export type SavedQueryBody = Omit<SavedQuery, 'id' | 'kind' | 'createdAt' | 'updatedAt'>;

export type ConnectionTest = { ok: boolean; message: string; latencyMs: number };

export type SqlResult = { rows: Record<string, unknown>[]; rowCount: number; columns: string[]; truncated?: boolean };
export type HttpResult = { status: number; headers: Record<string, string>; body: unknown };
export type PreviewResult = SqlResult | HttpResult;

export function isSqlResult(result: PreviewResult): result is SqlResult {
  return Array.isArray((result as SqlResult).rows) && Array.isArray((result as SqlResult).columns);
}

const sourcePath = (id: string) => `/api/data-sources/${encodeURIComponent(id)}`;
const queryPath = (id: string) => `/api/queries/${encodeURIComponent(id)}`;

/** Every page of a list (the API pages by 50 to 200). */
async function all<T>(fetchPage: (cursor: string | null) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<T> = await fetchPage(cursor);
    items.push(...page.items);
    cursor = page.nextCursor ?? null;
  } while (cursor);
  return items;
}

export const dataSources = {
  list: () => all((cursor) => request<Page<DataSource>>('GET', `/api/data-sources${query({ cursor, limit: 200 })}`)),
  get: (id: string) => request<DataSource>('GET', sourcePath(id)),
  create: (body: DataSourceBody) => request<DataSource>('POST', '/api/data-sources', body),
  update: (id: string, body: DataSourceBody) => request<DataSource>('PUT', sourcePath(id), body),
  remove: (id: string) => request<void>('DELETE', sourcePath(id)),
  /** Try a connection before saving it (nothing is stored). */
  testUnsaved: (body: DataSourceBody) => request<ConnectionTest>('POST', '/api/data-sources/test', body),
  /** Try a saved data source with its stored secrets. */
  test: (id: string) => request<ConnectionTest>('POST', `${sourcePath(id)}/test`),
  /** Where sources may point on this server (FLOWDECK_SQLITE_DIRS as the operator set it). */
  rules: () => request<SourceRules>('GET', '/api/data-sources/rules'),
};

export type SourceRules = { sqliteDirectories: string[] };

export const savedQueries = {
  list: (dataSourceId?: string) =>
    all((cursor) => request<Page<SavedQuery>>('GET', `/api/queries${query({ dataSourceId, cursor, limit: 200 })}`)),
  get: (id: string) => request<SavedQuery>('GET', queryPath(id)),
  create: (body: SavedQueryBody) => request<SavedQuery>('POST', '/api/queries', body),
  update: (id: string, body: SavedQueryBody) => request<SavedQuery>('PUT', queryPath(id), body),
  remove: (id: string) => request<void>('DELETE', queryPath(id)),
  preview: (id: string, args: Record<string, unknown>) => request<PreviewResult>('POST', `${queryPath(id)}/preview`, { args }),
};

/** The `:name` parameters of SQL (`\:` is a literal colon, `::` a cast), as the backend binds them. */
export function sqlParameters(sql: string): string[] {
  const names: string[] = [];
  for (const m of sql.matchAll(/(?<![:\w\\]):([A-Za-z_]\w*)(?!:)/g)) {
    const name = m[1];
    if (name && !names.includes(name)) names.push(name);
  }
  return names;
}

/** The `{{ name }}` placeholders of an HTTP query's parts. */
export function httpParameters(...parts: unknown[]): string[] {
  const names: string[] = [];
  for (const m of JSON.stringify(parts).matchAll(/\{\{\s*([A-Za-z_]\w*)\s*\}\}/g)) {
    const name = m[1];
    if (name && !names.includes(name)) names.push(name);
  }
  return names;
}

/** A typed argument: JSON when it parses (numbers, booleans, lists), else the text as it is. */
export function argumentValue(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return '';
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return text;
  }
}
