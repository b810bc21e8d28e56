/**
 * Flow control as the Settings panel edits it (SPEC §2): `options.concurrency` {limit, key?, strategy},
 * `options.debounce` {seconds, key?} and `options.priority` (1–100, default 50), read tolerantly from the
 * definition's loose JSON, written back without defaults, and checked in the browser with the server's ranges
 * (domain/flow_control.py). Pure, no React.
 */
import type { WorkflowOptions } from '../../graph/convert';
import { withOption } from './options';

export const STRATEGIES = ['queue', 'cancel_in_progress', 'cancel_newest'] as const;
export type Strategy = (typeof STRATEGIES)[number];
export const MAX_CONCURRENCY_LIMIT = 10_000;
export const MAX_DEBOUNCE_SECONDS = 7 * 24 * 3600;
export const MIN_PRIORITY = 1;
export const MAX_PRIORITY = 100;
export const DEFAULT_PRIORITY = 50;
export const MAX_KEY_CHARS = 1000;

export const STRATEGY_LABELS: Record<Strategy, string> = {
  queue: 'Queue: wait in order',
  cancel_in_progress: 'Cancel in progress: the new run cancels the oldest',
  cancel_newest: 'Cancel newest: the new run is cancelled',
};

export type Concurrency = { limit?: number; key?: string; strategy: Strategy };
export type Debounce = { seconds?: number; key?: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function numberOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function keyOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** `options.concurrency`, or null when the workflow has none. */
export function concurrencyOf(options: WorkflowOptions | null | undefined): Concurrency | null {
  const raw = options?.concurrency;
  if (!isRecord(raw)) return null;
  const strategy = STRATEGIES.includes(raw.strategy as Strategy) ? (raw.strategy as Strategy) : 'queue';
  return { limit: numberOf(raw.limit), key: keyOf(raw.key), strategy };
}

/** `options.debounce`, or null when the workflow has none. */
export function debounceOf(options: WorkflowOptions | null | undefined): Debounce | null {
  const raw = options?.debounce;
  if (!isRecord(raw)) return null;
  return { seconds: numberOf(raw.seconds), key: keyOf(raw.key) };
}

export function priorityOf(options: WorkflowOptions | null | undefined): number | undefined {
  return numberOf(options?.priority);
}

/** `options` with `concurrency` set as edited (no empty key, no default strategy), or removed with null. */
export function withConcurrency(options: WorkflowOptions | null | undefined, value: Concurrency | null): WorkflowOptions | null {
  if (value === null) return withOption(options, 'concurrency', undefined);
  const out: Record<string, unknown> = {};
  if (value.limit !== undefined) out.limit = value.limit;
  if (value.key) out.key = value.key;
  if (value.strategy !== 'queue') out.strategy = value.strategy;
  return withOption(options, 'concurrency', out);
}

export function withDebounce(options: WorkflowOptions | null | undefined, value: Debounce | null): WorkflowOptions | null {
  if (value === null) return withOption(options, 'debounce', undefined);
  const out: Record<string, unknown> = {};
  if (value.seconds !== undefined) out.seconds = value.seconds;
  if (value.key) out.key = value.key;
  return withOption(options, 'debounce', out);
}

/** The priority as saved: left out at the default (50). */
export function withPriority(options: WorkflowOptions | null | undefined, value: number | undefined): WorkflowOptions | null {
  return withOption(options, 'priority', value === undefined || value === DEFAULT_PRIORITY ? undefined : value);
}

export function limitError(limit: number | undefined): string | undefined {
  if (limit === undefined) return 'Required: how many runs may run at once';
  return Number.isInteger(limit) && limit >= 1 && limit <= MAX_CONCURRENCY_LIMIT
    ? undefined
    : `A whole number from 1 to ${MAX_CONCURRENCY_LIMIT.toLocaleString('en')}`;
}

export function debounceSecondsError(seconds: number | undefined): string | undefined {
  if (seconds === undefined) return 'Required: the quiet time before the last run starts';
  return seconds > 0 && seconds <= MAX_DEBOUNCE_SECONDS ? undefined : `Above 0 and at most ${MAX_DEBOUNCE_SECONDS.toLocaleString('en')} (7 days)`;
}

export function priorityError(priority: number | undefined): string | undefined {
  if (priority === undefined) return undefined;
  return Number.isInteger(priority) && priority >= MIN_PRIORITY && priority <= MAX_PRIORITY
    ? undefined
    : `A whole number from ${MIN_PRIORITY} to ${MAX_PRIORITY}`;
}

export function keyError(key: string | undefined): string | undefined {
  if (!key) return undefined;
  if (key.length > MAX_KEY_CHARS) return `At most ${MAX_KEY_CHARS} characters`;
  const opens = (key.match(/\{\{/g) ?? []).length;
  const closes = (key.match(/\}\}/g) ?? []).length;
  return opens === closes ? undefined : 'A template such as {{ ctx.input.customerId }}: every {{ needs its }}';
}
