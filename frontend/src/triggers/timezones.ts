/** IANA time zone names, as the browser knows them (`Intl.supportedValuesOf('timeZone')`). */

let cached: readonly string[] | null = null;

/** The browser's zones, with UTC first (Chromium lists it under "UTC" only via resolvedOptions). */
export function supportedTimeZones(): readonly string[] {
  if (cached) return cached;
  let zones: string[];
  try {
    zones = Intl.supportedValuesOf('timeZone');
  } catch {
    zones = [];
  }
  cached = ['UTC', ...zones.filter((z) => z !== 'UTC')];
  return cached;
}

/** Whether `name` is a zone the browser knows (the list, or failing that, one Intl accepts). */
export function isValidTimeZone(name: string, zones: readonly string[] = supportedTimeZones()): boolean {
  if (name === '') return false;
  if (zones.includes(name)) return true;
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    // Accepted aliases (e.g. "Asia/Calcutta") are fine too: the server resolves them with its tz database.
    return /^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(name);
  } catch {
    return false;
  }
}

/** The zone a new schedule starts with: the user's own, else UTC. */
export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/** A message for the timezone field, or null when it is fine ('' means the default, UTC). */
export function timeZoneError(name: string, zones?: readonly string[]): string | null {
  if (name === '') return null;
  return isValidTimeZone(name, zones) ? null : `“${name}” is not an IANA time zone (e.g. Europe/Paris, America/New_York, UTC)`;
}
