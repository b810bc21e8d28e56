import { describe, expect, it } from 'vitest';

import { formatDateTime, formatTime, formatWait } from './format';

describe('formatWait', () => {
  it('counts seconds, then minutes, hours and days', () => {
    expect(formatWait(0)).toBe('0s');
    expect(formatWait(41.2)).toBe('42s');
    expect(formatWait(185)).toBe('3m 05s');
    expect(formatWait(2 * 3600 + 4 * 60 + 59)).toBe('2h 04m');
    expect(formatWait(3 * 86400 + 2 * 3600 + 7)).toBe('3d 2h');
  });

  it('never shows a negative wait', () => {
    expect(formatWait(-5)).toBe('0s');
  });
});

describe('formatDateTime', () => {
  it('always shows the date, also for today', () => {
    const now = new Date();
    now.setHours(9, 5, 7, 0);
    const text = formatDateTime(now.getTime() / 1000);
    expect(text).toContain(now.toLocaleString(undefined, { day: 'numeric' }));
    expect(text).toContain(now.toLocaleString(undefined, { month: 'short' }));
    expect(text).toMatch(/09.05.07/);
    expect(formatDateTime(null)).toBe('—');
  });

  it('adds the year when it is not this one', () => {
    expect(formatDateTime(Date.UTC(2019, 5, 15, 12) / 1000)).toContain('2019');
  });
});

describe('formatTime', () => {
  it('shows the time alone today, the date before today, and the year before this year', () => {
    const now = new Date();
    const today = new Date(now.getFullYear(), now.getMonth(), now.getDate(), 0, 0, 5).getTime() / 1000;
    expect(formatTime(today)).toBe(new Date(today * 1000).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' }));
    const earlier = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1, 9, 30).getTime() / 1000;
    const shown = formatTime(earlier);
    expect(shown).toContain(new Date(earlier * 1000).toLocaleString(undefined, { day: 'numeric' }));
    expect(shown).toContain(new Date(earlier * 1000).toLocaleString(undefined, { month: 'short' }));
    const lastYear = new Date(now.getFullYear() - 1, 5, 15, 9, 30).getTime() / 1000;
    expect(formatTime(lastYear)).toContain(String(now.getFullYear() - 1));
    expect(formatTime(null)).toBe('—');
  });
});
