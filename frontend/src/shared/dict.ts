/**
 * Objects keyed by names users choose (node ids, iteration paths, output variables): null-prototype,
 * so `__proto__`, `constructor` or `toString` are keys like any other (SPEC allows them as node ids).
 *
 * A plain `{}` indexed by such a key reads `Object.prototype` members (`nodes.constructor` is a
 * function) and `obj.__proto__ = v` replaces the prototype. Build these records only with the helpers
 * below (a spread `{...record}` gives a plain object back), and read untrusted objects (parsed JSON)
 * with `own`.
 */
export type Dict<T> = Record<string, T>;

export function dict<T>(entries: Iterable<readonly [string, T]> = []): Dict<T> {
  const out = Object.create(null) as Dict<T>;
  for (const [key, value] of entries) out[key] = value;
  return out;
}

/** A null-prototype copy of any object's own entries (e.g. one parsed from JSON). */
export function dictOf<T>(record: Readonly<Record<string, T>> | null | undefined): Dict<T> {
  return dict(Object.entries(record ?? {}));
}

/** A copy with `key` set. */
export function withKey<T>(record: Readonly<Dict<T>>, key: string, value: T): Dict<T> {
  const out = dictOf(record);
  out[key] = value;
  return out;
}

/** A copy without `key`. */
export function withoutKey<T>(record: Readonly<Dict<T>>, key: string): Dict<T> {
  return dict(Object.entries(record).filter(([k]) => k !== key));
}

/** `record[key]` if it is the record's own entry (never an inherited member). */
export function own<T>(record: Readonly<Record<string, T>> | null | undefined, key: string): T | undefined {
  return record && Object.hasOwn(record, key) ? record[key] : undefined;
}

export function hasOwn(record: Readonly<Record<string, unknown>> | null | undefined, key: string): boolean {
  return record !== null && record !== undefined && Object.hasOwn(record, key);
}
