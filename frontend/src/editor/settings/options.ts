/**
 * Workflow settings as the editor edits them: `options` (SPEC §1, §8) read from and written back to the
 * definition's loose JSON, schedule rows checked in the browser, and the server's problems found by path.
 * Pure, no React. Keys this form does not know are kept as they are.
 */
import type { Problem } from '../../api/types';
import type { JsonValue, WorkflowOptions } from '../../graph/convert';
import { cronError } from '../../triggers/cron';
import { timeZoneError } from '../../triggers/timezones';

export const MAX_SCHEDULES = 20;
export const DEFAULT_TIMEZONE = 'UTC';
export const DEFAULT_CRON = '0 9 * * *';

/** One row of `options.schedules`: `timezone` left out means UTC, `input` left out means null. */
export type Schedule = { cron: string; timezone?: string; input?: JsonValue };

export type ScheduleErrors = { row?: string; cron?: string; timezone?: string; input?: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The schedules of a definition's options, tolerant of anything odd (a bad row becomes an empty cron). */
export function schedulesOf(options: WorkflowOptions | null | undefined): Schedule[] {
  const raw = options?.schedules;
  if (!Array.isArray(raw)) return [];
  return raw.map((item: unknown) => {
    const row = isRecord(item) ? item : {};
    const schedule: Schedule = { cron: typeof row.cron === 'string' ? row.cron : '' };
    if (typeof row.timezone === 'string' && row.timezone !== '') schedule.timezone = row.timezone;
    if ('input' in row && row.input !== null && row.input !== undefined) schedule.input = row.input as JsonValue;
    return schedule;
  });
}

/** A row as saved: no empty timezone, no null input (the defaults), nothing else. */
export function scheduleToJson(schedule: Schedule): Schedule {
  const out: Schedule = { cron: schedule.cron };
  if (schedule.timezone) out.timezone = schedule.timezone;
  if (schedule.input !== undefined && schedule.input !== null) out.input = schedule.input;
  return out;
}

/** `options` with `key` set (or removed when `value` is undefined); null when nothing is left. */
export function withOption(options: WorkflowOptions | null | undefined, key: string, value: unknown): WorkflowOptions | null {
  const next: WorkflowOptions = { ...(options ?? {}) };
  if (value === undefined) delete next[key];
  else next[key] = value;
  return Object.keys(next).length === 0 ? null : next;
}

export function withSchedules(options: WorkflowOptions | null | undefined, schedules: readonly Schedule[]): WorkflowOptions | null {
  return withOption(options, 'schedules', schedules.length === 0 ? undefined : schedules.map(scheduleToJson));
}

export function numberOption(options: WorkflowOptions | null | undefined, key: 'timeoutSeconds' | 'slaSeconds'): number | undefined {
  const value = options?.[key];
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** A positive number of seconds, or undefined (the default); anything else is the message. */
export function secondsError(value: number | undefined): string | undefined {
  if (value === undefined) return undefined;
  return Number.isFinite(value) && value > 0 ? undefined : 'A number of seconds above 0';
}

/** "90 s" → "1 min 30 s", "3600" → "1 h": the hint next to a seconds field. */
export function formatDuration(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) return '';
  const units: [number, string][] = [
    [86_400, 'd'],
    [3600, 'h'],
    [60, 'min'],
    [1, 's'],
  ];
  let rest = Math.round(seconds);
  if (rest === 0) return `${seconds} s`;
  const parts: string[] = [];
  for (const [size, name] of units) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)} ${name}`);
      rest %= size;
    }
  }
  return parts.slice(0, 2).join(' ');
}

/** The text shown for a schedule's input: '' for none (null), else pretty JSON. */
export function inputText(input: JsonValue | undefined): string {
  return input === undefined || input === null ? '' : JSON.stringify(input, null, 2);
}

export type ParsedInput = { ok: true; value: JsonValue | undefined } | { ok: false; error: string };

/** The input field's text: blank is no input (null), else it must be JSON. */
export function parseInputText(text: string): ParsedInput {
  if (text.trim() === '') return { ok: true, value: undefined };
  try {
    const value = JSON.parse(text) as JsonValue;
    return { ok: true, value: value === null ? undefined : value };
  } catch (err) {
    return { ok: false, error: `Not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** What is wrong with one row, checked in the browser (the server's answers come on top, by path). */
export function validateSchedule(schedule: Schedule, zones?: readonly string[]): ScheduleErrors {
  const errors: ScheduleErrors = {};
  const cron = cronError(schedule.cron);
  if (cron) errors.cron = cron;
  const timezone = timeZoneError(schedule.timezone ?? '', zones);
  if (timezone) errors.timezone = timezone;
  return errors;
}

export function validateSchedules(schedules: readonly Schedule[], zones?: readonly string[]): ScheduleErrors[] {
  return schedules.map((s, i) => {
    const errors = validateSchedule(s, zones);
    if (i >= MAX_SCHEDULES) errors.row = `At most ${MAX_SCHEDULES} schedules`;
    return errors;
  });
}

/** Problems about the workflow's own fields (`title`, `description`, `options…`), by path; first one wins. */
export function settingsProblems(problems: readonly Problem[]): Record<string, string> {
  const byPath: Record<string, string> = {};
  for (const p of problems) {
    if (!p.path || p.nodeId || p.edgeId) continue;
    if (!/^(title|description|options)\b/.test(p.path)) continue;
    byPath[p.path] ??= p.message;
  }
  return byPath;
}

/** The server's message for a schedule field (`options.schedules[0].cron`), or for the row itself. */
export function scheduleProblem(byPath: Record<string, string>, index: number, field?: keyof Schedule): string | undefined {
  const row = `options.schedules[${index}]`;
  return field ? byPath[`${row}.${field}`] : byPath[row];
}

/** `options.onFailure` / `options.onSlaBreach`: an error workflow to start and/or a URL to POST to. */
export type NotificationKey = 'onFailure' | 'onSlaBreach';
export type NotificationTarget = { workflowId?: string; url?: string };

export function notificationOf(options: WorkflowOptions | null | undefined, key: NotificationKey): NotificationTarget {
  const raw = options?.[key];
  if (!isRecord(raw)) return {};
  const target: NotificationTarget = {};
  if (typeof raw.workflowId === 'string' && raw.workflowId !== '') target.workflowId = raw.workflowId;
  if (typeof raw.url === 'string' && raw.url !== '') target.url = raw.url;
  return target;
}

/** `options` with one field of a notification target changed; an empty target is removed. */
export function withNotification(
  options: WorkflowOptions | null | undefined,
  key: NotificationKey,
  field: keyof NotificationTarget,
  value: string,
): WorkflowOptions | null {
  const next: NotificationTarget = { ...notificationOf(options, key) };
  if (value.trim() === '') delete next[field];
  else next[field] = value.trim();
  return withOption(options, key, Object.keys(next).length === 0 ? undefined : next);
}

/** A notification URL as the browser can tell: http(s) with a host, or the message. */
export function notificationUrlError(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? undefined : 'An http:// or https:// URL';
  } catch {
    return 'An http:// or https:// URL';
  }
}

/** `options.webhookLabels` as editable rows (label name, path into the webhook's JSON body). */
export type WebhookLabelRow = { name: string; path: string };

export function webhookLabelsOf(options: WorkflowOptions | null | undefined): WebhookLabelRow[] {
  const raw = options?.webhookLabels;
  if (!isRecord(raw)) return [];
  return Object.entries(raw).map(([name, path]) => ({ name, path: typeof path === 'string' ? path : '' }));
}

/** `options` with the rows saved as `webhookLabels`; rows without a name are not saved yet (the form keeps them). */
export function withWebhookLabels(options: WorkflowOptions | null | undefined, rows: readonly WebhookLabelRow[]): WorkflowOptions | null {
  const saved: Record<string, string> = {};
  for (const row of rows) if (row.name.trim() !== '') saved[row.name.trim()] = row.path.trim();
  return withOption(options, 'webhookLabels', Object.keys(saved).length === 0 ? undefined : saved);
}

/** The browser's own message for a row: a name used twice (the server checks the name's and the path's form). */
export function webhookLabelRowErrors(rows: readonly WebhookLabelRow[]): (string | undefined)[] {
  const seen = new Set<string>();
  return rows.map((row) => {
    const name = row.name.trim();
    if (name === '') return row.path.trim() === '' ? undefined : 'Give the label a name';
    if (seen.has(name)) return `The label "${name}" is set twice`;
    seen.add(name);
    return undefined;
  });
}
