/**
 * Widget shapes shared with the backend (docs/widgets.md): the widget, its per-type config, the data answer
 * and embed tokens. No imports from the editor: the embed page uses this module too. The REST shapes are
 * aliases of generated/api.ts (openapi-typescript, from the backend's OpenAPI document).
 */
import type { components } from '../generated/api';

type Schemas = components['schemas'];

export const WIDGET_TYPES = ['table', 'chart', 'metric', 'text', 'json'] as const;
export type WidgetType = (typeof WIDGET_TYPES)[number];
export const WIDGET_MODES = ['replay', 'sync'] as const;
export type WidgetMode = (typeof WIDGET_MODES)[number];

export const VALUE_FORMATS = ['text', 'number', 'percent', 'currency', 'date', 'datetime'] as const;
export type ValueFormat = (typeof VALUE_FORMATS)[number];
export type SortDirection = 'asc' | 'desc';
export type TableSort = { column: number; direction: SortDirection };
export const CHART_TYPES = ['bar', 'line', 'pie'] as const;
export type ChartType = (typeof CHART_TYPES)[number];

export type TableColumnConfig = { path: string; label?: string; format?: ValueFormat; currency?: string };
export type TableConfig = { rowsPath?: string; columns: TableColumnConfig[]; pageSize?: number; sort?: TableSort | null };
export type ChartConfig = { chartType: ChartType; rowsPath?: string; labelPath: string; series: { path: string; label?: string }[] };
export type MetricConfig = { valuePath: string; label: string; format?: ValueFormat; unit?: string; currency?: string };
export type TextConfig = { path: string };
export type JsonConfig = { path?: string; expandDepth?: number };

export const INPUT_TYPES = ['string', 'number', 'boolean', 'json'] as const;
export type SyncInput = { param: string; field: string; type: (typeof INPUT_TYPES)[number]; required?: boolean; default?: unknown };
/** Keys sync mode adds to every type's config. */
export type SyncConfig = { waitSeconds?: number; inputs?: SyncInput[] };

export type WidgetConfig = (TableConfig | ChartConfig | MetricConfig | TextConfig | JsonConfig) & SyncConfig;

export type Widget = Schemas['WidgetOut'];

/** POST and PUT body: the whole widget (the backend's WidgetIn also wants `workflowId` on PUT). */
export type WidgetBody = Pick<Widget, 'workflowId' | 'name' | 'type' | 'mode' | 'config' | 'frameAncestors'> & Schemas['WidgetIn'];

// ---- the data answer ----

export type WidgetStatus = 'ready' | 'empty' | 'running' | 'error';

export type TableData = {
  columns: { key: string; label: string; format: ValueFormat; currency?: string | null }[];
  rows: Record<string, unknown>[];
  total: number;
  pageSize: number;
  sort: TableSort | null;
  truncated?: boolean;
};
export type ChartData = { chartType: ChartType; labels: unknown[]; series: { label: string; values: (number | null)[] }[] };
export type MetricData = {
  label: string;
  value: number | null;
  format: ValueFormat | null;
  /** ISO 4217 code for the `currency` format (null: USD). */
  currency?: string | null;
  unit: string | null;
  previous: number | null;
  change: number | null;
  changePercent: number | null;
};
export type TextData = { html: string };
export type JsonData = { value: unknown; expandDepth: number };

/** The answer's fields besides its typed `data` (the API's `data` is any object: the type picks its shape). */
type AnswerBase = Omit<Schemas['WidgetDataOut'], 'type' | 'data'>;

export type WidgetAnswer =
  | (AnswerBase & { type: 'table'; data: TableData | null })
  | (AnswerBase & { type: 'chart'; data: ChartData | null })
  | (AnswerBase & { type: 'metric'; data: MetricData | null })
  | (AnswerBase & { type: 'text'; data: TextData | null })
  | (AnswerBase & { type: 'json'; data: JsonData | null });

// ---- embed tokens ----

export type EmbedToken = Schemas['EmbedTokenOut'];
export type CreatedEmbedToken = Schemas['EmbedTokenCreated'];

// ---- Socket.IO (embed connection) ----

/** An embed connection hears its widget's processed data only (`widget_data`, a WidgetAnswer), never a run. */
export { EMBED_SOCKET_EVENTS } from '../generated/realtime';
