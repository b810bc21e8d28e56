/**
 * Undo/redo as a pure value: `past` holds earlier snapshots, `future` the undone ones.
 *
 * The caller records the state *before* a change. Changes with the same `key` within `coalesceMs`
 * (typing in one field, say) fold into one undo step.
 */

export type History<T> = {
  readonly past: readonly T[];
  readonly future: readonly T[];
  readonly lastKey: string | null;
  readonly lastAt: number;
};

export const HISTORY_LIMIT = 100;
export const COALESCE_MS = 800;

export function emptyHistory<T>(): History<T> {
  return { past: [], future: [], lastKey: null, lastAt: 0 };
}

export type RecordOptions = { key?: string; now?: number; limit?: number; coalesceMs?: number };

/** Remember `before` (the state just before a change); clears the redo stack. */
export function record<T>(history: History<T>, before: T, options: RecordOptions = {}): History<T> {
  const now = options.now ?? Date.now();
  const key = options.key ?? null;
  const coalesce = key !== null && key === history.lastKey && now - history.lastAt <= (options.coalesceMs ?? COALESCE_MS);
  if (coalesce) return { ...history, future: [], lastAt: now };
  const limit = options.limit ?? HISTORY_LIMIT;
  const past = [...history.past, before];
  return { past: past.length > limit ? past.slice(past.length - limit) : past, future: [], lastKey: key, lastAt: now };
}

export type Step<T> = { history: History<T>; present: T };

export function undo<T>(history: History<T>, present: T): Step<T> | null {
  const previous = history.past[history.past.length - 1];
  if (previous === undefined) return null;
  return {
    history: { past: history.past.slice(0, -1), future: [present, ...history.future], lastKey: null, lastAt: 0 },
    present: previous,
  };
}

export function redo<T>(history: History<T>, present: T): Step<T> | null {
  const [next, ...rest] = history.future;
  if (next === undefined) return null;
  return { history: { past: [...history.past, present], future: rest, lastKey: null, lastAt: 0 }, present: next };
}

export function canUndo<T>(history: History<T>): boolean {
  return history.past.length > 0;
}

export function canRedo<T>(history: History<T>): boolean {
  return history.future.length > 0;
}
