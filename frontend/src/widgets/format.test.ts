import { describe, expect, it } from 'vitest';

import {
  clampPage,
  clockTime,
  compareValues,
  describeChange,
  formatChangePercent,
  formatValue,
  nextSort,
  pageCount,
  pageRows,
  sortRows,
  toDate,
} from './format';

const en = { locale: 'en-US', timeZone: 'UTC' };

describe('formatValue', () => {
  it('shows empty values as a dash and text as is', () => {
    expect(formatValue(null, 'number')).toBe('—');
    expect(formatValue(undefined, 'text')).toBe('—');
    expect(formatValue('abc', 'text')).toBe('abc');
    expect(formatValue({ a: 1 }, undefined)).toBe('{"a":1}');
    expect(formatValue(true, 'text')).toBe('true');
  });
  it('formats numbers with grouping and at most 2 decimals', () => {
    expect(formatValue(1234567.891, 'number', en)).toBe('1,234,567.89');
    expect(formatValue('42', 'number', en)).toBe('42');
    expect(formatValue('n/a', 'number', en)).toBe('n/a');
  });
  it('formats percent from a fraction', () => {
    expect(formatValue(0.125, 'percent', en)).toBe('12.5%');
    expect(formatValue(1, 'percent', en)).toBe('100%');
  });
  it('formats currency in the default currency', () => {
    expect(formatValue(1234.5, 'currency', en)).toBe('$1,234.50');
    expect(formatValue(-3, 'currency', { ...en, currency: 'EUR' })).toBe('-€3.00');
    expect(formatValue(1234, 'currency', { ...en, currency: 'JPY' })).toBe('¥1,234');
    expect(formatValue(5, 'currency', { ...en, currency: null })).toBe('$5.00');
  });
  it('formats dates from epoch seconds, milliseconds and ISO strings', () => {
    expect(formatValue(1_795_243_138, 'date', en)).toBe('Nov 21, 2026');
    expect(formatValue(1_795_243_138_000, 'date', en)).toBe('Nov 21, 2026');
    expect(formatValue('2026-11-21', 'date', { locale: 'en-US', timeZone: 'America/Los_Angeles' })).toBe('Nov 21, 2026');
    expect(formatValue('2026-11-21T03:18:58Z', 'datetime', en)).toBe('Nov 21, 2026, 03:18:58');
    expect(formatValue('2026-11-21', 'datetime', en)).toBe('Nov 21, 2026');
    expect(formatValue('not a date', 'date', en)).toBe('not a date');
  });
  it('recognises dates', () => {
    expect(toDate('x')).toBeNull();
    expect(toDate(0)?.date.toISOString()).toBe('1970-01-01T00:00:00.000Z');
    expect(toDate('2026-01-02')?.dateOnly).toBe(true);
  });
});

describe('sorting', () => {
  it('orders numbers, booleans, strings naturally, then objects', () => {
    const values = ['b10', 3, 'b2', true, { z: 1 }, -1, 'A1'];
    expect([...values].sort(compareValues)).toEqual([-1, 3, true, 'A1', 'b2', 'b10', { z: 1 }]);
  });
  it('sorts rows by a key, stable, empties last in both directions', () => {
    const rows = [
      { c0: 'x', c1: 2 },
      { c0: 'y', c1: null },
      { c0: 'z', c1: 1 },
      { c0: 'w', c1: 2 },
      { c0: 'v' },
    ];
    expect(sortRows(rows, 'c1', 'asc').map((r) => r.c0)).toEqual(['z', 'x', 'w', 'y', 'v']);
    expect(sortRows(rows, 'c1', 'desc').map((r) => r.c0)).toEqual(['x', 'w', 'z', 'y', 'v']);
    expect(sortRows(rows, null, 'asc')).toEqual(rows);
    expect(sortRows(rows, 'c0', 'asc')).not.toBe(rows);
  });
  it('cycles a header: new column ascending, same column flips', () => {
    expect(nextSort(null, 2)).toEqual({ column: 2, direction: 'asc' });
    expect(nextSort({ column: 2, direction: 'asc' }, 2)).toEqual({ column: 2, direction: 'desc' });
    expect(nextSort({ column: 2, direction: 'desc' }, 2)).toEqual({ column: 2, direction: 'asc' });
    expect(nextSort({ column: 2, direction: 'desc' }, 0)).toEqual({ column: 0, direction: 'asc' });
  });
});

describe('paging', () => {
  const rows = Array.from({ length: 23 }, (_, i) => i);
  it('counts pages', () => {
    expect(pageCount(0, 10)).toBe(1);
    expect(pageCount(23, 10)).toBe(3);
    expect(pageCount(20, 10)).toBe(2);
    expect(pageCount(5, 0)).toBe(5);
  });
  it('slices a page and its range, clamping the page', () => {
    expect(pageRows(rows, 0, 10)).toEqual({ rows: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], page: 0, from: 1, to: 10 });
    expect(pageRows(rows, 2, 10)).toEqual({ rows: [20, 21, 22], page: 2, from: 21, to: 23 });
    expect(pageRows(rows, 9, 10).page).toBe(2);
    expect(pageRows([], 0, 10)).toEqual({ rows: [], page: 0, from: 0, to: 0 });
    expect(clampPage(-3, 23, 10)).toBe(0);
  });
});

describe('change arrows', () => {
  it('formats a signed percent', () => {
    expect(formatChangePercent(12.345, 'en-US')).toBe('+12.3%');
    expect(formatChangePercent(-3, 'en-US')).toBe('−3%');
    expect(formatChangePercent(0, 'en-US')).toBe('0%');
    expect(formatChangePercent(null)).toBeNull();
  });
  it('picks an arrow from the change', () => {
    expect(describeChange(5, 25, 'en-US')).toEqual({ direction: 'up', arrow: '▲', text: '+25%' });
    expect(describeChange(-2, -10, 'en-US')).toEqual({ direction: 'down', arrow: '▼', text: '−10%' });
    expect(describeChange(0, 0, 'en-US')).toEqual({ direction: 'flat', arrow: '▬', text: '0%' });
    // no percent when the previous value was 0: the absolute change is shown
    expect(describeChange(4, null, 'en-US')).toEqual({ direction: 'up', arrow: '▲', text: '+4' });
    expect(describeChange(null, null)).toBeNull();
  });
  it('shows a 24 h clock', () => {
    expect(clockTime(new Date(2026, 0, 2, 3, 4, 5))).toBe('03:04:05');
  });
});
