/**
 * A 400's `extra` mapped onto form fields. The API names the field of each problem: `path` for the
 * data-source, query and account rules (`config.url`, `secrets.password`, `parameters[0]`,
 * `newPassword`), `key` for Litestar's body validation. What names no field stays in `general`.
 */
import { ApiError } from '../api/client';

export type FieldErrors = {
  /** Field path → message (a null-prototype object: any path the API names is safe as a key). */
  fields: Readonly<Record<string, string>>;
  /** The message for the form as a whole, when the error names no field (or names none the form shows). */
  general: string | null;
};

export const NO_ERRORS: FieldErrors = { fields: Object.create(null) as Record<string, string>, general: null };

function fieldOf(item: unknown): { path: string; message: string } | null {
  if (typeof item !== 'object' || item === null) return null;
  const record = item as { path?: unknown; key?: unknown; message?: unknown };
  const path = typeof record.path === 'string' ? record.path : typeof record.key === 'string' ? record.key : null;
  if (path === null || path === '' || typeof record.message !== 'string') return null;
  return { path, message: record.message };
}

/** Split an error into per-field messages and a general one (any error: network, 409, 500 too). */
export function fieldErrors(err: unknown): FieldErrors {
  const fields = Object.create(null) as Record<string, string>;
  if (!(err instanceof ApiError)) return { fields, general: err instanceof Error ? err.message : String(err) };
  const items = Array.isArray(err.extra) ? err.extra : [];
  for (const item of items) {
    const field = fieldOf(item);
    if (field && !(field.path in fields)) fields[field.path] = field.message;
  }
  return { fields, general: Object.keys(fields).length > 0 ? null : err.detail };
}

/**
 * The message for a field the form shows: its own path or one inside it (`config.headers` takes
 * `config.headers.X-Key`); several names for one control (`['config.url', 'config']`).
 */
export function errorAt(errors: FieldErrors, ...names: string[]): string | undefined {
  for (const name of names) {
    if (name in errors.fields) return errors.fields[name];
    for (const path of Object.keys(errors.fields)) {
      if (path.startsWith(`${name}.`) || path.startsWith(`${name}[`)) return errors.fields[path];
    }
  }
  return undefined;
}

/**
 * The messages no shown field took (`shown`: the names the form passes to errorAt), so nothing the API
 * said is lost: the form shows them with the general message.
 */
export function unshownErrors(errors: FieldErrors, shown: readonly string[]): string[] {
  const left = Object.keys(errors.fields).filter(
    (path) => !shown.some((name) => path === name || path.startsWith(`${name}.`) || path.startsWith(`${name}[`)),
  );
  const messages = left.map((path) => `${path}: ${errors.fields[path]}`);
  return errors.general ? [errors.general, ...messages] : messages;
}
