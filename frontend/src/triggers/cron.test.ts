import { describe, expect, it } from 'vitest';

import { cronError, formatRunTime, nextRunTimes, relativeTime, schedulePreview } from './cron';

const NOW = new Date('2026-11-21T09:00:00Z'); // a Saturday

describe('cronError', () => {
  it('accepts plain 5-field cron: numbers, *, lists, ranges, steps and names', () => {
    for (const ok of ['* * * * *', '0 9 * * 1-5', '*/15 * * * *', '0 0 1,15 * *', '5 4 * JAN-MAR mon', '0 0 * * 7', '0-30/10 8-18/2 * * *', ' 0 9 * * * ']) {
      expect(cronError(ok), ok).toBeNull();
    }
  });

  it('names the field and the problem', () => {
    expect(cronError('')).toMatch(/Enter a cron expression/);
    expect(cronError('0 9 * *')).toMatch(/5 fields.*this one has 4/);
    expect(cronError('0 0 9 * * *')).toMatch(/this one has 6/);
    expect(cronError('61 * * * *')).toBe('minute: 61 is out of range 0–59');
    expect(cronError('0 24 * * *')).toBe('hour: 24 is out of range 0–23');
    expect(cronError('0 0 0 * *')).toBe('day of month: 0 is out of range 1–31');
    expect(cronError('0 0 * 13 *')).toBe('month: 13 is out of range 1–12');
    expect(cronError('0 0 * * 8')).toBe('day of week: 8 is out of range 0–7');
    expect(cronError('0 0 * * FOO')).toMatch(/day of week: “FOO” is not a number or a name like SUN/);
    expect(cronError('x * * * *')).toMatch(/minute: “x” is not a number$/);
    expect(cronError('30-10 * * * *')).toMatch(/runs backwards/);
    expect(cronError('*/0 * * * *')).toMatch(/at least 1/);
    expect(cronError('5/10 * * * *')).toMatch(/needs \* or a range/);
    expect(cronError('1,,2 * * * *')).toMatch(/empty item/);
    expect(cronError('0 0 L * *')).toMatch(/day of month/);
    expect(cronError('@daily')).toMatch(/Nicknames/);
  });
});

describe('next run times', () => {
  it('follows the time zone, including daylight saving', () => {
    const paris = nextRunTimes('0 9 * * 1-5', 'Europe/Paris', 3, NOW).map((d) => d.toISOString());
    expect(paris).toEqual(['2026-11-23T08:00:00.000Z', '2026-11-24T08:00:00.000Z', '2026-11-25T08:00:00.000Z']);
    const utc = nextRunTimes('*/15 * * * *', 'UTC', 2, NOW).map((d) => d.toISOString());
    expect(utc).toEqual(['2026-11-21T09:15:00.000Z', '2026-11-21T09:30:00.000Z']);
    // New York leaves summer time on 1 Nov 2026: 09:00 local is 13:00Z before, 14:00Z after.
    const ny = nextRunTimes('0 9 * * *', 'America/New_York', 2, new Date('2026-10-31T00:00:00Z')).map((d) => d.toISOString());
    expect(ny).toEqual(['2026-10-31T13:00:00.000Z', '2026-11-01T14:00:00.000Z']);
  });

  it('combines day of month and day of week with OR, as cron does', () => {
    const times = nextRunTimes('0 0 1 * 1', 'UTC', 3, NOW).map((d) => d.toISOString().slice(0, 10));
    expect(times).toEqual(['2026-11-23', '2026-11-30', '2026-12-01']);
  });

  it('formats in the schedule zone, with a relative hint', () => {
    expect(formatRunTime(new Date('2026-11-23T08:00:00Z'), 'Europe/Paris')).toBe('Mon 23 Nov 2026, 09:00');
    expect(relativeTime(new Date('2026-11-21T09:15:00Z'), NOW)).toBe('in 15 min');
    expect(relativeTime(new Date('2026-11-21T12:59:00Z'), NOW)).toBe('in 3 h');
    expect(relativeTime(new Date('2026-11-24T09:00:00Z'), NOW)).toBe('in 3 days');
  });

  it('previews three times, or says why not', () => {
    const preview = schedulePreview('30 18 * * FRI', 'Asia/Tokyo', 3, NOW);
    expect(preview).toEqual({
      ok: true,
      times: [
        { iso: '2026-11-27T09:30:00.000Z', label: 'Fri 27 Nov 2026, 18:30', relative: 'in 6 days' },
        { iso: '2026-12-04T09:30:00.000Z', label: 'Fri 4 Dec 2026, 18:30', relative: 'in 13 days' },
        { iso: '2026-12-11T09:30:00.000Z', label: 'Fri 11 Dec 2026, 18:30', relative: 'in 20 days' },
      ],
    });
    expect(schedulePreview('61 * * * *', 'UTC', 3, NOW)).toEqual({ ok: false, error: 'minute: 61 is out of range 0–59' });
    expect(schedulePreview('0 0 31 2 *', 'UTC', 3, NOW)).toEqual({ ok: false, error: 'This expression never fires (no such date)' });
    const badZone = schedulePreview('0 0 * * *', 'Mars/Olympus', 3, NOW);
    expect(badZone.ok).toBe(false);
  });
});
