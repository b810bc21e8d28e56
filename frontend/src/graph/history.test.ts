import { describe, expect, it } from 'vitest';

import { canRedo, canUndo, emptyHistory, record, redo, undo } from './history';

describe('history', () => {
  it('undoes and redoes in order', () => {
    let h = emptyHistory<number>();
    h = record(h, 1, { now: 0 });
    h = record(h, 2, { now: 1 });
    let present = 3;
    const u1 = undo(h, present);
    expect(u1?.present).toBe(2);
    if (!u1) return;
    const u2 = undo(u1.history, u1.present);
    expect(u2?.present).toBe(1);
    if (!u2) return;
    expect(canUndo(u2.history)).toBe(false);
    expect(undo(u2.history, u2.present)).toBeNull();
    const r1 = redo(u2.history, u2.present);
    expect(r1?.present).toBe(2);
    if (!r1) return;
    const r2 = redo(r1.history, r1.present);
    expect(r2?.present).toBe(3);
    present = r2?.present ?? 0;
    expect(present).toBe(3);
    expect(r2 && canRedo(r2.history)).toBe(false);
  });

  it('a new change clears the redo stack', () => {
    let h = record(emptyHistory<string>(), 'a', { now: 0 });
    const step = undo(h, 'b');
    expect(step).not.toBeNull();
    if (!step) return;
    h = record(step.history, step.present, { now: 10 });
    expect(canRedo(h)).toBe(false);
    expect(h.past).toEqual(['a']);
  });

  it('coalesces changes with the same key within the window', () => {
    let h = emptyHistory<string>();
    h = record(h, 'x', { key: 'label:n1', now: 0 });
    h = record(h, 'xa', { key: 'label:n1', now: 300 });
    h = record(h, 'xab', { key: 'label:n1', now: 600 });
    expect(h.past).toEqual(['x']);
    h = record(h, 'xabc', { key: 'label:n1', now: 5000 });
    expect(h.past).toEqual(['x', 'xabc']);
    h = record(h, 'y', { key: 'label:n2', now: 5001 });
    expect(h.past).toHaveLength(3);
  });

  it('keeps at most `limit` steps', () => {
    let h = emptyHistory<number>();
    for (let i = 0; i < 10; i++) h = record(h, i, { now: i * 10_000, limit: 4 });
    expect(h.past).toEqual([6, 7, 8, 9]);
  });
});
