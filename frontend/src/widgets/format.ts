/**
 * Pure display helpers for widgets: value formats, sorting, paging and change arrows.
 *
 * Conventions (docs/widgets.md leaves them open; written down in docs/editor.md "Widgets"):
 * - `percent` takes a fraction: 0.125 shows as "12.5%" (as spreadsheets and Intl do).
 * - `currency` shows in the column's or metric's `currency` (an ISO 4217 code), `DEFAULT_CURRENCY` when unset.
 * - `date` / `datetime` take epoch seconds (as everywhere in the API), epoch milliseconds past year 5000
 *   in seconds, or an ISO 8601 string; a date-only string ("2026-11-21") is shown as that calendar day.
 * - `changePercent` of a metric is already in percent units (12.5 means +12.5 %).
 */
import type { SortDirection, ValueFormat } from './types';

export const DEFAULT_CURRENCY = 'USD';
const EMPTY = '—';

export type FormatOptions = { locale?: string | undefined; timeZone?: string | undefined; currency?: string | null | undefined };

function numberOf(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return null;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** A Date from epoch seconds, epoch milliseconds or an ISO string; null when it is none of them. */
export function toDate(value: unknown): { date: Date; dateOnly: boolean } | null {
  if (typeof value === 'number' && Number.isFinite(value)) {
    // 1e11 s is the year 5138: anything bigger is surely milliseconds.
    return { date: new Date(Math.abs(value) >= 1e11 ? value : value * 1000), dateOnly: false };
  }
  if (typeof value === 'string' && value.trim() !== '') {
    const text = value.trim();
    const d = new Date(text);
    if (Number.isNaN(d.getTime())) return null;
    return { date: d, dateOnly: DATE_ONLY.test(text) };
  }
  return null;
}

/** Plain text for any JSON value (objects as compact JSON). */
export function formatText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

function currencyFormat(locale: string | undefined, currency: string | null | undefined): Intl.NumberFormat {
  try {
    return new Intl.NumberFormat(locale, { style: 'currency', currency: currency || DEFAULT_CURRENCY });
  } catch {
    // A well-formed code this browser does not know: the number is still shown, with its code.
    return new Intl.NumberFormat(locale, { style: 'currency', currency: DEFAULT_CURRENCY, currencyDisplay: 'code' });
  }
}

export function formatValue(value: unknown, format: ValueFormat | null | undefined, opts: FormatOptions = {}): string {
  if (value === null || value === undefined) return EMPTY;
  const locale = opts.locale;
  switch (format ?? 'text') {
    case 'number': {
      const n = numberOf(value);
      return n === null ? formatText(value) : new Intl.NumberFormat(locale, { maximumFractionDigits: 2 }).format(n);
    }
    case 'percent': {
      const n = numberOf(value);
      return n === null ? formatText(value) : new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: 1 }).format(n);
    }
    case 'currency': {
      const n = numberOf(value);
      return n === null
        ? formatText(value)
        : currencyFormat(locale, opts.currency).format(n);
    }
    case 'date':
    case 'datetime': {
      const parsed = toDate(value);
      if (!parsed) return formatText(value);
      const timeZone = parsed.dateOnly ? 'UTC' : opts.timeZone;
      const base: Intl.DateTimeFormatOptions = { year: 'numeric', month: 'short', day: 'numeric' };
      if (timeZone) base.timeZone = timeZone;
      if (format === 'datetime' && !parsed.dateOnly) {
        Object.assign(base, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
      }
      return new Intl.DateTimeFormat(locale, base).format(parsed.date);
    }
    default:
      return formatText(value);
  }
}

// ---- sorting ----

function rank(value: unknown): number {
  if (value === null || value === undefined) return 4;
  if (typeof value === 'number') return Number.isNaN(value) ? 4 : 0;
  if (typeof value === 'boolean') return 1;
  if (typeof value === 'string') return 2;
  return 3;
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

/** Ascending order of two cell values: numbers, then booleans, then strings (natural order), then objects. */
export function compareValues(a: unknown, b: unknown): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 0) return (a as number) - (b as number);
  if (ra === 1) return Number(a) - Number(b);
  if (ra === 2) return collator.compare(a as string, b as string);
  if (ra === 3) return collator.compare(formatText(a), formatText(b));
  return 0;
}

/** A sorted copy (stable); empty values (null, missing) always last, whatever the direction. */
export function sortRows<T extends Record<string, unknown>>(rows: readonly T[], key: string | null, direction: SortDirection): T[] {
  if (key === null) return [...rows];
  const sign = direction === 'desc' ? -1 : 1;
  return rows
    .map((row, index) => ({ row, index }))
    .sort((x, y) => {
      const a = x.row[key];
      const b = y.row[key];
      const emptyA = a === null || a === undefined;
      const emptyB = b === null || b === undefined;
      if (emptyA || emptyB) return emptyA === emptyB ? x.index - y.index : emptyA ? 1 : -1;
      return sign * compareValues(a, b) || x.index - y.index;
    })
    .map((e) => e.row);
}

/** The next sort when a header is clicked: a new column starts ascending; the same column flips. */
export function nextSort(current: { column: number; direction: SortDirection } | null, column: number): { column: number; direction: SortDirection } {
  if (current && current.column === column) return { column, direction: current.direction === 'asc' ? 'desc' : 'asc' };
  return { column, direction: 'asc' };
}

// ---- paging ----

export function pageCount(total: number, pageSize: number): number {
  const size = Math.max(1, Math.floor(pageSize) || 1);
  return Math.max(1, Math.ceil(Math.max(0, total) / size));
}

export function clampPage(page: number, total: number, pageSize: number): number {
  return Math.min(Math.max(0, Math.floor(page)), pageCount(total, pageSize) - 1);
}

/** Rows of one page (0-based) plus the 1-based range shown ("11–20 of 42"). */
export function pageRows<T>(rows: readonly T[], page: number, pageSize: number): { rows: T[]; page: number; from: number; to: number } {
  const size = Math.max(1, Math.floor(pageSize) || 1);
  const p = clampPage(page, rows.length, size);
  const start = p * size;
  const slice = rows.slice(start, start + size);
  return { rows: slice, page: p, from: slice.length ? start + 1 : 0, to: start + slice.length };
}

// ---- metric change ----

export type ChangeDirection = 'up' | 'down' | 'flat';

export function changeDirection(change: number | null | undefined): ChangeDirection | null {
  if (change === null || change === undefined || !Number.isFinite(change)) return null;
  return change > 0 ? 'up' : change < 0 ? 'down' : 'flat';
}

export const CHANGE_ARROWS: Record<ChangeDirection, string> = { up: '▲', down: '▼', flat: '▬' };

/** "+12.5%" / "−3%" / "0%" from a change already in percent units; null when unknown. */
export function formatChangePercent(changePercent: number | null | undefined, locale?: string): string | null {
  if (changePercent === null || changePercent === undefined || !Number.isFinite(changePercent)) return null;
  const text = new Intl.NumberFormat(locale, { maximumFractionDigits: 1 }).format(Math.abs(changePercent));
  const sign = changePercent > 0 ? '+' : changePercent < 0 ? '−' : '';
  return `${sign}${text}%`;
}

/** Arrow, percent and a sentence for a metric's change against the previous run. */
export function describeChange(
  change: number | null | undefined,
  changePercent: number | null | undefined,
  locale?: string,
): { direction: ChangeDirection; arrow: string; text: string } | null {
  const direction = changeDirection(change ?? (changePercent ?? null));
  if (!direction) return null;
  const pct = formatChangePercent(changePercent, locale);
  const abs =
    change === null || change === undefined
      ? null
      : `${change > 0 ? '+' : change < 0 ? '−' : ''}${new Intl.NumberFormat(locale, { maximumFractionDigits: 2 }).format(Math.abs(change))}`;
  return { direction, arrow: CHANGE_ARROWS[direction], text: pct ?? abs ?? '' };
}

/** "hh:mm:ss" (24 h) of a Date, for the embed footer. */
export function clockTime(date: Date): string {
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}
