import { describe, expect, it } from 'vitest';

import type { NodeUpdateMessage } from '../api/realtime-types';
import cases from './delayHolds.cases.json';
import { runReducer, type RunView } from './runReducer';

function nodeMsg(nodeID: string, status: NodeUpdateMessage['status'], at: number, extra: Partial<NodeUpdateMessage> = {}): NodeUpdateMessage {
  return { kind: 'node', instanceID: 'r1', nodeID, iteration: '', status, attempt: 1, output: null, outputTruncated: null, error: null, at, pinned: false, nextAttemptAt: null, childInstanceId: null, waitingFor: null, ...extra };
}

function play(...msgs: NodeUpdateMessage[]): RunView {
  let s = runReducer(null, { kind: 'started', runId: 'r1', input: {}, isTest: true }) as RunView;
  for (const m of msgs) s = runReducer(s, m) as RunView;
  return s;
}

describe('a delay, live', () => {
  const completed = [nodeMsg('wait', 'RUNNING', 10), nodeMsg('wait', 'COMPLETED', 10.005, { output: { delayedSeconds: 2 } })];

  it('is WAITING until it falls due, and its successors PENDING, not "queued" or "starts in"', () => {
    const s = play(...completed, nodeMsg('a', 'DISPATCHED', 10.006, { nextAttemptAt: 12 }), nodeMsg('b', 'DISPATCHED', 10.006, { nextAttemptAt: 12 }));
    expect(s.nodes.wait).toMatchObject({ status: 'WAITING', nextAttemptAt: 12, completedAt: null });
    expect(s.nodes.a).toMatchObject({ status: 'PENDING', nextAttemptAt: null });
    expect(s.nodes.b).toMatchObject({ status: 'PENDING', nextAttemptAt: null });
  });

  it('completes when it falls due, as soon as a successor starts', () => {
    const s = play(...completed, nodeMsg('a', 'DISPATCHED', 10.006, { nextAttemptAt: 12 }), nodeMsg('a', 'RUNNING', 12.01));
    expect(s.nodes.wait).toMatchObject({ status: 'COMPLETED', completedAt: 12, nextAttemptAt: null });
    expect(s.nodes.a?.status).toBe('RUNNING');
  });

  it('leaves a node that is simply queued (no due time) alone', () => {
    const s = play(...completed, nodeMsg('a', 'DISPATCHED', 10.006));
    expect(s.nodes.wait?.status).toBe('COMPLETED');
    expect(s.nodes.a?.status).toBe('DISPATCHED');
  });

  it('completes for a client that joined while it waited, as soon as a successor it holds starts', () => {
    const waiting = { status: 'WAITING' as const, attempt: 1, startedAt: 10, completedAt: null, output: { delayedSeconds: 2 }, error: null, nextAttemptAt: 12, holds: ['a'] };
    const pending = { status: 'PENDING' as const, attempt: 1, startedAt: null, completedAt: null, output: null, error: null };
    let s = runReducer(null, { kind: 'started', runId: 'r1', input: {}, isTest: true }) as RunView;
    s = runReducer(s, { kind: 'snapshot', instanceID: 'r1', status: 'RUNNING', slaBreachedAt: null, nodes: { wait: waiting, a: pending, other: pending } }) as RunView;
    s = runReducer(s, nodeMsg('other', 'RUNNING', 11)) as RunView; // a parallel branch moving ends nothing
    expect(s.nodes.wait?.status).toBe('WAITING');
    s = runReducer(s, nodeMsg('a', 'RUNNING', 12.01)) as RunView;
    expect(s.nodes.wait).toMatchObject({ status: 'COMPLETED', completedAt: 12, nextAttemptAt: null });
  });
});

describe('a delay found WAITING on joining: the cases the chaos suite mirror shares (delayHolds.cases.json)', () => {
  for (const c of cases.cases) {
    it(c.name, () => {
      let s = runReducer(null, { kind: 'started', runId: 'r1', input: {}, isTest: true }) as RunView;
      s = runReducer(s, { kind: 'snapshot', instanceID: 'r1', status: 'RUNNING', slaBreachedAt: null, nodes: c.nodes as unknown as RunView['nodes'] }) as RunView;
      for (const update of c.updates) {
        const [nodeID, iteration, status] = update as [string, string, NodeUpdateMessage['status']];
        s = runReducer(s, nodeMsg(nodeID, status, 12.01, { iteration })) as RunView;
      }
      const shown = Object.fromEntries(
        Object.keys(c.shown).map((where) => {
          const [nodeId = '', iteration] = where.split('@');
          const node = s.nodes[nodeId];
          return [where, iteration === undefined ? node?.status : node?.iterations?.[iteration]?.status];
        }),
      );
      expect(shown).toEqual(c.shown);
    });
  }
});
