import { describe, expect, it } from 'vitest';

import { dayRange, parseLabels } from './RunSearchFilters';

describe('dayRange', () => {
  it('runs from the first local midnight to the end of the last day', () => {
    const range = dayRange('2026-03-01', '2026-03-02');
    expect(range.error).toBeNull();
    expect(range.from).toBe(new Date(2026, 2, 1).getTime() / 1000);
    expect(range.to).toBe(new Date(2026, 2, 3).getTime() / 1000);
  });

  it('leaves an open end open', () => {
    expect(dayRange('', '2026-03-02')).toEqual({ from: null, to: new Date(2026, 2, 3).getTime() / 1000, error: null });
    expect(dayRange('', '')).toEqual({ from: null, to: null, error: null });
  });

  it('refuses a backwards range and what is not a date', () => {
    expect(dayRange('2026-03-05', '2026-03-01').error).toMatch(/after the last day/);
    expect(dayRange('yesterday', '').error).toMatch(/YYYY-MM-DD/);
  });
});

describe('parseLabels', () => {
  it('reads name=value pairs separated by spaces or commas', () => {
    expect(parseLabels('customer=acme, region=eu')).toEqual({ labels: { customer: 'acme', region: 'eu' }, error: null });
    expect(parseLabels('  ')).toEqual({ labels: {}, error: null });
    expect(parseLabels('order.id=a=b')).toEqual({ labels: { 'order.id': 'a=b' }, error: null });
  });

  it('refuses a pair without = or with a bad name', () => {
    expect(parseLabels('customer').error).toMatch(/name=value/);
    expect(parseLabels('bad$name=x').error).toMatch(/name=value/);
  });
});
