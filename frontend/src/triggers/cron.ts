/**
 * 5-field cron expressions (SPEC §8 schedules): checking one, and its next run times computed in the browser.
 *
 * The syntax check is ours, so the messages name the field ("hour: 24 is out of range 0–23") and the accepted
 * syntax is plain Vixie cron (numbers, `*`, `,`, `-`, `/`, month and day names), what the contract promises;
 * Quartz extras (`L`, `W`, `#`, `?`), seconds and `@daily` nicknames are refused. The next times come from
 * croner (no dependencies, time zones through Intl) in its 5-part mode; day-of-month and day-of-week combine
 * with OR when both are restricted, as in Vixie cron.
 */
import { Cron } from 'croner';

export type CronField = { name: string; min: number; max: number; names?: readonly string[] };

export const CRON_FIELDS: readonly CronField[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'] },
  // 0 and 7 are both Sunday.
  { name: 'day of week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

export const CRON_HINT = 'minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5';

function valueOf(text: string, field: CronField): number | string {
  if (/^\d+$/.test(text)) {
    const n = Number(text);
    if (n < field.min || n > field.max) return `${field.name}: ${n} is out of range ${field.min}–${field.max}`;
    return n;
  }
  const index = field.names?.indexOf(text.toUpperCase()) ?? -1;
  if (index >= 0) return field.name === 'month' ? index + 1 : index;
  return `${field.name}: “${text}” is not a number${field.names ? ' or a name like ' + field.names[0] : ''}`;
}

/** One field of a cron expression: null when fine, else what is wrong with it. */
export function checkCronField(text: string, field: CronField): string | null {
  for (const part of text.split(',')) {
    if (part === '') return `${field.name}: empty item in the list “${text}”`;
    const [range, step, ...extra] = part.split('/');
    if (extra.length > 0 || range === undefined) return `${field.name}: more than one “/” in “${part}”`;
    if (step !== undefined && !/^\d+$/.test(step)) return `${field.name}: the step after “/” must be a number, not “${step}”`;
    if (step !== undefined && Number(step) < 1) return `${field.name}: the step must be at least 1`;
    if (range === '*') continue;
    const bounds = range.split('-');
    if (bounds.length > 2 || bounds.some((b) => b === '')) return `${field.name}: “${range}” is not a value or a range a-b`;
    const values = bounds.map((b) => valueOf(b, field));
    const bad = values.find((v): v is string => typeof v === 'string');
    if (bad) return bad;
    const [from, to] = values as number[];
    if (to !== undefined && from! > to) return `${field.name}: the range ${range} runs backwards`;
    if (step !== undefined && to === undefined) return `${field.name}: a step needs * or a range before it (“*/${step}”)`;
  }
  return null;
}

/** null when `expression` is a valid 5-field cron expression, else a message for the user. */
export function cronError(expression: string): string | null {
  const text = expression.trim();
  if (text === '') return 'Enter a cron expression: ' + CRON_HINT;
  if (text.startsWith('@')) return `Nicknames like ${text.split(/\s/)[0]} are not supported: write the 5 fields (${CRON_HINT})`;
  const fields = text.split(/\s+/);
  if (fields.length !== 5) return `A cron expression has 5 fields (${CRON_HINT}); this one has ${fields.length}`;
  for (let i = 0; i < 5; i++) {
    const problem = checkCronField(fields[i]!, CRON_FIELDS[i]!);
    if (problem) return problem;
  }
  return null;
}

/**
 * The next `count` times (after `from`) at which `expression` fires in `timeZone`.
 * Throws on an invalid expression or time zone; an expression that never fires (31 February) gives [].
 */
export function nextRunTimes(expression: string, timeZone: string, count = 3, from: Date = new Date()): Date[] {
  const job = new Cron(expression.trim(), { paused: true, timezone: timeZone, mode: '5-part', domAndDow: false });
  try {
    return job.nextRuns(count, from);
  } finally {
    job.stop();
  }
}

export type RunTimePreview = { iso: string; label: string; relative: string };

export type SchedulePreview = { ok: true; times: RunTimePreview[] } | { ok: false; error: string };

/** "in 5 min", "in 3 h", "in 2 days" (rounded down, at least "in 1 min"). */
export function relativeTime(date: Date, now: Date): string {
  const minutes = Math.max(1, Math.floor((date.getTime() - now.getTime()) / 60_000));
  if (minutes < 60) return `in ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `in ${hours} h`;
  return `in ${Math.floor(hours / 24)} days`;
}

/** A run time as the schedule's zone sees it: "Mon 23 Nov 2026, 09:00". */
export function formatRunTime(date: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    year: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(date);
  const get = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? '';
  return `${get('weekday')} ${get('day')} ${get('month')} ${get('year')}, ${get('hour')}:${get('minute')}`;
}

/** What the schedule row shows under the cron field: the next run times, or why there are none. */
export function schedulePreview(expression: string, timeZone: string, count = 3, now: Date = new Date()): SchedulePreview {
  const error = cronError(expression);
  if (error) return { ok: false, error };
  let times: Date[];
  try {
    times = nextRunTimes(expression, timeZone, count, now);
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message.replace(/^\w+: /, '') : String(err) };
  }
  if (times.length === 0) return { ok: false, error: 'This expression never fires (no such date)' };
  return { ok: true, times: times.map((d) => ({ iso: d.toISOString(), label: formatRunTime(d, timeZone), relative: relativeTime(d, now) })) };
}
