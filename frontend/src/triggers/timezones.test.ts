import { describe, expect, it } from 'vitest';

import { isValidTimeZone, supportedTimeZones, timeZoneError } from './timezones';

describe('time zones', () => {
  it('lists the IANA zones with UTC first', () => {
    const zones = supportedTimeZones();
    expect(zones[0]).toBe('UTC');
    expect(zones).toContain('Europe/Paris');
    expect(new Set(zones).size).toBe(zones.length);
  });

  it('checks a name against the list and Intl', () => {
    expect(isValidTimeZone('America/New_York')).toBe(true);
    expect(isValidTimeZone('UTC')).toBe(true);
    expect(isValidTimeZone('Mars/Olympus')).toBe(false);
    expect(isValidTimeZone('')).toBe(false);
    expect(isValidTimeZone('Europe/Paris', ['UTC'])).toBe(true); // not listed, but Intl knows it
    expect(timeZoneError('')).toBeNull();
    expect(timeZoneError('Europe/Pariss')).toMatch(/not an IANA time zone/);
  });
});
