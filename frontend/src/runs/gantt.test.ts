import { describe, expect, it } from 'vitest';

import type { TimelineRow } from '../api/types';
import { buildGantt } from './gantt';
import { attemptPlace } from './runReducer';

function row(nodeId: string, startedAt: number | null, completedAt: number | null, attempt = 1, status: TimelineRow['status'] = 'COMPLETED'): TimelineRow {
  return { nodeId, iteration: '', attempt, status, startedAt, completedAt };
}

describe('buildGantt', () => {
  it('scales bars to the run span, in start order', () => {
    const g = buildGantt([row('b', 12, 14), row('a', 10, 12), row('b', 14, 20, 2)], 100);
    expect(g.start).toBe(10);
    expect(g.end).toBe(20);
    expect(g.bars.map((b) => [b.nodeId, b.attempt, b.left, b.width])).toEqual([
      ['a', 1, 0, 20],
      ['b', 1, 20, 20],
      ['b', 2, 40, 60],
    ]);
    expect(g.ticks[0]).toEqual({ at: 0, left: 0 });
    expect(g.ticks.at(-1)?.left).toBeLessThanOrEqual(100);
  });

  it('closes running attempts at now and skips rows that never started', () => {
    const g = buildGantt([row('a', 0, 1), row('b', 1, null, 1, 'RUNNING'), row('c', null, null, 0, 'SKIPPED')], 5);
    expect(g.bars).toHaveLength(2);
    expect(g.bars[1]).toMatchObject({ nodeId: 'b', open: true, end: 5, width: 80 });
  });

  it('keeps who ran each attempt and whether another worker took it over', () => {
    const lost = { ...row('a', 0, 3, 1, 'FAILED'), workerId: 'w1', takenOver: true };
    const g = buildGantt([lost, { ...row('a', 3, 4, 2), workerId: 'w2' }], 5);
    expect(g.bars.map((b) => [b.attempt, b.workerId, b.takenOver])).toEqual([
      [1, 'w1', true],
      [2, 'w2', false],
    ]);
  });

  it('numbers each attempt within its partial retry, as the API counts', () => {
    const g = buildGantt([row('a', 0, 1, 1, 'FAILED'), { ...row('a', 2, 3, 2), retry: 1, attemptInRetry: 1 }], 5);
    expect(g.bars.map((b) => [b.attempt, b.attemptInRetry, b.retry, attemptPlace(b)])).toEqual([
      [1, 1, 0, '1'],
      [2, 1, 1, '1, retry 1'],
    ]);
  });

  it('gives an empty chart for no rows', () => {
    expect(buildGantt([], 3).bars).toEqual([]);
  });

  it('names bars by node label, and writes a short bar’s duration beside it', () => {
    const labels: Record<string, string> = { a: 'Fetch orders', wait: 'Wait a bit' };
    const g = buildGantt([row('a', 0, 0.05), row('wait', 0.05, 10), row('z', 9.99, 10)], 20, (id) => labels[id] ?? '');
    const [a, wait, z] = g.bars;
    expect(a).toMatchObject({ label: 'Fetch orders', durationAt: 'after' }); // 0.5 % wide: beside it
    expect(wait).toMatchObject({ label: 'Wait a bit', durationAt: 'inside' });
    expect(z).toMatchObject({ label: 'z', durationAt: 'before' }); // no label: its id; at the end: before it
  });
});
