import { describe, expect, it } from 'vitest';

import type { NodeUpdateMessage } from '../api/realtime-types';
import { attemptLabel, completedOutputs, displayStatus, runReducer, timeSpan, type RunView } from './runReducer';

function nodeMsg(nodeID: string, status: NodeUpdateMessage['status'], attempt = 1, extra: Partial<NodeUpdateMessage> = {}): NodeUpdateMessage {
  return { kind: 'node', instanceID: 'r1', nodeID, iteration: '', status, attempt, output: null, outputTruncated: null, error: null, at: 100, pinned: false, nextAttemptAt: null, childInstanceId: null, waitingFor: null, ...extra };
}

function started(): RunView {
  const state = runReducer(null, { kind: 'started', runId: 'r1', input: { a: 1 }, isTest: true });
  if (!state) throw new Error('no state');
  return state;
}

describe('runReducer', () => {
  it('shows what a waiting node waits for, and forgets it once the node goes on', () => {
    let s = started();
    const waitingFor = { resumeOn: 'webhook' as const, url: '/resume/abc', until: 999 };
    s = runReducer(s, nodeMsg('hold', 'RUNNING')) as RunView;
    s = runReducer(s, nodeMsg('hold', 'WAITING', 1, { waitingFor })) as RunView;
    expect(s.nodes.hold).toMatchObject({ status: 'WAITING', waitingFor });
    s = runReducer(s, nodeMsg('hold', 'COMPLETED', 1, { output: { body: 1 } })) as RunView;
    expect(s.nodes.hold?.status).toBe('COMPLETED');
    expect(s.nodes.hold?.waitingFor ?? null).toBeNull();
  });

  it('takes a waiting approval announced again with a counted decision, and a snapshot without it keeps it', () => {
    let s = started();
    const waiting = { resumeOn: 'approval' as const, url: '/approvals/a1', approvalId: 'a1', until: 999 };
    s = runReducer(s, nodeMsg('ok', 'WAITING', 1, { waitingFor: waiting })) as RunView;
    const decisions = [{ email: 'bob@acme.test', decision: 'approve' as const, comment: null, at: 120 }];
    s = runReducer(s, nodeMsg('ok', 'WAITING', 1, { waitingFor: { ...waiting, required: 2, decisions } })) as RunView;
    expect(s.nodes.ok?.waitingFor).toMatchObject({ required: 2, decisions });
    s = runReducer(s, nodeMsg('ok', 'WAITING', 1, { waitingFor: waiting })) as RunView; // a late repeat moves nothing back
    expect(s.nodes.ok?.waitingFor?.decisions).toEqual(decisions);
  });

  it('sums a loop body up as WAITING while its only unfinished iterations are parked on a wait', () => {
    let s = started();
    const waitingFor = { resumeOn: 'form' as const, url: '/forms/abc', until: 999 };
    s = runReducer(s, nodeMsg('hold', 'WAITING', 1, { iteration: '0', waitingFor })) as RunView;
    s = runReducer(s, nodeMsg('hold', 'COMPLETED', 1, { iteration: '1' })) as RunView;
    expect(displayStatus(s.nodes.hold)).toBe('WAITING');
    s = runReducer(s, nodeMsg('hold', 'RUNNING', 1, { iteration: '2' })) as RunView;
    expect(displayStatus(s.nodes.hold)).toBe('RUNNING');
  });

  it('marks an SLA breach once, keeps the run going, and keeps the mark through a snapshot', () => {
    let s = started();
    expect(s.slaBreachedAt ?? null).toBeNull();
    s = runReducer(s, { kind: 'sla', instanceID: 'r1', slaSeconds: 5, at: 105 }) as RunView;
    s = runReducer(s, { kind: 'sla', instanceID: 'r1', slaSeconds: 5, at: 107 }) as RunView;
    expect(s.slaBreachedAt).toBe(105);
    s = runReducer(s, { kind: 'snapshot', instanceID: 'r1', status: 'RUNNING', slaBreachedAt: null, nodes: {} }) as RunView;
    expect(s).toMatchObject({ status: 'RUNNING', slaBreachedAt: 105 });
    expect(runReducer(s, { kind: 'sla', instanceID: 'other', slaSeconds: 5, at: 1 })).toBe(s);
  });

  it('folds node updates and the run status', () => {
    let s = started();
    s = runReducer(s, nodeMsg('a', 'RUNNING')) as RunView;
    s = runReducer(s, nodeMsg('a', 'COMPLETED', 1, { output: { v: 1 }, at: 101 })) as RunView;
    s = runReducer(s, { kind: 'status', instanceID: 'r1', status: 'COMPLETED', output: { v: 1 }, outputTruncated: null, error: null }) as RunView;
    expect(s.nodes.a).toMatchObject({ status: 'COMPLETED', output: { v: 1 }, startedAt: 100, completedAt: 101 });
    expect(s.status).toBe('COMPLETED');
    expect(s.log.map((l) => l.status)).toEqual(['RUNNING', 'COMPLETED']);
    expect(completedOutputs(s)).toEqual({ a: { v: 1 } });
  });

  it('keeps a truncated output as its size and link until the node completes again', () => {
    const truncated = { bytes: 10_000_002, preview: '"xxx', href: '/api/runs/r1/nodes/a/output' };
    let s = started();
    s = runReducer(s, nodeMsg('a', 'COMPLETED', 1, { outputTruncated: truncated, at: 101 })) as RunView;
    expect(s.nodes.a).toMatchObject({ output: null, outputTruncated: truncated });
    s = runReducer(s, nodeMsg('a', 'DISPATCHED', 2)) as RunView;
    expect(s.nodes.a?.outputTruncated).toEqual(truncated);
    s = runReducer(s, nodeMsg('a', 'COMPLETED', 2, { output: { v: 2 } })) as RunView;
    expect(s.nodes.a).toMatchObject({ output: { v: 2 }, outputTruncated: null });
  });

  it('ignores stale updates and other runs', () => {
    let s = started();
    s = runReducer(s, nodeMsg('a', 'COMPLETED', 2, { output: 1 })) as RunView;
    s = runReducer(s, nodeMsg('a', 'RUNNING', 2)) as RunView;
    s = runReducer(s, nodeMsg('a', 'FAILED', 1)) as RunView;
    expect(s.nodes.a?.status).toBe('COMPLETED');
    const other = runReducer(s, { ...nodeMsg('b', 'RUNNING'), instanceID: 'r2' });
    expect(other).toBe(s);
  });

  it('tracks retries with the attempt and the wait', () => {
    let s = started();
    s = runReducer(s, nodeMsg('a', 'RETRYING', 1, { error: 'boom', nextAttemptAt: 105 })) as RunView;
    expect(s.nodes.a).toMatchObject({ status: 'RETRYING', attempt: 1, error: 'boom', nextAttemptAt: 105 });
    s = runReducer(s, nodeMsg('a', 'RUNNING', 2)) as RunView;
    expect(s.nodes.a).toMatchObject({ status: 'RUNNING', attempt: 2, error: 'boom' });
    s = runReducer(s, nodeMsg('a', 'COMPLETED', 2, { output: 3 })) as RunView;
    expect(s.nodes.a).toMatchObject({ status: 'COMPLETED', error: null });
  });

  it('counts attempts per partial retry: "attempt 1 of 3, retry 1", never "4/3"', () => {
    let s = started();
    s = runReducer(s, nodeMsg('a', 'RUNNING', 1)) as RunView;
    s = runReducer(s, nodeMsg('a', 'RETRYING', 1)) as RunView;
    s = runReducer(s, nodeMsg('a', 'RUNNING', 2)) as RunView;
    expect(attemptLabel(s.nodes.a!, 3)).toBe('attempt 2 of 3');
    s = runReducer(s, nodeMsg('a', 'FAILED', 3)) as RunView;
    s = runReducer(s, nodeMsg('a', 'DISPATCHED', 4)) as RunView; // the partial retry dispatches it again
    s = runReducer(s, nodeMsg('a', 'RUNNING', 4)) as RunView;
    expect(s.nodes.a).toMatchObject({ attempt: 4, attemptInRetry: 1, retry: 1 });
    expect(attemptLabel(s.nodes.a!, 3)).toBe('attempt 1 of 3, retry 1');
    s = runReducer(s, nodeMsg('a', 'RETRYING', 4)) as RunView;
    s = runReducer(s, nodeMsg('a', 'RUNNING', 5)) as RunView;
    expect(attemptLabel(s.nodes.a!, 3)).toBe('attempt 2 of 3, retry 1');
  });

  it('keeps when a node queued behind a delay falls due, until it starts', () => {
    let s = started();
    s = runReducer(s, nodeMsg('after', 'DISPATCHED', 1, { nextAttemptAt: 130 })) as RunView;
    expect(s.nodes.after).toMatchObject({ status: 'DISPATCHED', nextAttemptAt: 130 });
    s = runReducer(s, nodeMsg('after', 'RUNNING', 1)) as RunView;
    expect(s.nodes.after?.nextAttemptAt).toBeNull();
  });

  it('merges a snapshot without going backwards', () => {
    let s = started();
    s = runReducer(s, nodeMsg('a', 'COMPLETED', 1, { output: 1 })) as RunView;
    s = runReducer(s, {
      kind: 'snapshot',
      instanceID: 'r1',
      status: 'RUNNING',
      slaBreachedAt: null,
      nodes: {
        a: { status: 'RUNNING', attempt: 1, startedAt: 1, completedAt: null, output: null, error: null },
        b: { status: 'DISPATCHED', attempt: 1, startedAt: null, completedAt: null, output: null, error: null },
      },
    }) as RunView;
    expect(s.nodes.a?.status).toBe('COMPLETED');
    expect(s.nodes.b?.status).toBe('DISPATCHED');
    expect(s.status).toBe('RUNNING');
  });

  it('keeps loop iterations apart and sums them up for the canvas', () => {
    let s = started();
    s = runReducer(s, nodeMsg('body', 'COMPLETED', 1, { iteration: '0', output: 1 })) as RunView;
    s = runReducer(s, nodeMsg('body', 'RUNNING', 1, { iteration: '1' })) as RunView;
    expect(Object.keys(s.nodes.body?.iterations ?? {})).toEqual(['0', '1']);
    expect(displayStatus(s.nodes.body)).toBe('RUNNING');
    s = runReducer(s, nodeMsg('body', 'COMPLETED', 1, { iteration: '1', output: 2 })) as RunView;
    expect(displayStatus(s.nodes.body)).toBe('COMPLETED');
    expect(displayStatus(undefined)).toBeNull();
  });

  it('spans a loop-body node over its iterations', () => {
    let s = started();
    s = runReducer(s, nodeMsg('body', 'COMPLETED', 1, { iteration: '0', at: 10 })) as RunView;
    s = runReducer(s, nodeMsg('body', 'COMPLETED', 1, { iteration: '1', at: 12 })) as RunView;
    expect(timeSpan(s.nodes.body)).toEqual({ start: 10, end: 12, iterations: 2 });
    expect(timeSpan(undefined)).toEqual({ start: null, end: null, iterations: 0 });
  });

  it('keeps the child run a workflow node started, from live updates, snapshots and the REST detail', () => {
    let s = started();
    s = runReducer(s, nodeMsg('sub', 'RUNNING')) as RunView;
    expect(s.nodes.sub?.childInstanceId ?? null).toBeNull();
    // the id may come on a second RUNNING update, which moves nothing else
    s = runReducer(s, nodeMsg('sub', 'RUNNING', 1, { childInstanceId: 'child-1' })) as RunView;
    expect(s.nodes.sub).toMatchObject({ status: 'RUNNING', childInstanceId: 'child-1' });
    // later updates without it keep it
    s = runReducer(s, nodeMsg('sub', 'COMPLETED', 1, { output: { doubled: 4 } })) as RunView;
    expect(s.nodes.sub).toMatchObject({ status: 'COMPLETED', childInstanceId: 'child-1' });
    // a snapshot that is not newer adds nothing but loses nothing
    const bare = { status: 'RUNNING' as const, attempt: 1, startedAt: 1, completedAt: null, output: null, error: null };
    s = runReducer(s, { kind: 'snapshot', instanceID: 'r1', status: 'RUNNING', slaBreachedAt: null, nodes: { sub: bare } }) as RunView;
    expect(s.nodes.sub).toMatchObject({ status: 'COMPLETED', childInstanceId: 'child-1' });

    // a late joiner learns it from the snapshot, even when its own state is as new
    let late = runReducer(started(), nodeMsg('sub', 'RUNNING')) as RunView;
    late = runReducer(late, { kind: 'snapshot', instanceID: 'r1', status: 'RUNNING', slaBreachedAt: null, nodes: { sub: { ...bare, childInstanceId: 'child-2' } } }) as RunView;
    expect(late.nodes.sub?.childInstanceId).toBe('child-2');

    const detail = runReducer(null, {
      kind: 'detail',
      detail: {
        instanceId: 'r1', workflowId: 'w', version: 1, isTest: false, status: 'COMPLETED', trigger: 'manual', createdAt: 1, startedAt: 1, completedAt: 2,
        error: null, slaBreachedAt: null, parentInstanceId: null, parentNodeId: null,
        nodes: { sub: { ...bare, status: 'COMPLETED', childInstanceId: 'child-3' } },
      },
    }) as RunView;
    expect(detail.nodes.sub?.childInstanceId).toBe('child-3');
  });

  it('keeps a child run per loop iteration', () => {
    let s = started();
    s = runReducer(s, nodeMsg('sub', 'RUNNING', 1, { iteration: '0', childInstanceId: 'c0' })) as RunView;
    s = runReducer(s, nodeMsg('sub', 'RUNNING', 1, { iteration: '1' })) as RunView;
    s = runReducer(s, nodeMsg('sub', 'RUNNING', 1, { iteration: '1', childInstanceId: 'c1' })) as RunView;
    s = runReducer(s, nodeMsg('sub', 'COMPLETED', 1, { iteration: '0', output: 1 })) as RunView;
    expect(s.nodes.sub?.iterations?.['0']).toMatchObject({ status: 'COMPLETED', childInstanceId: 'c0' });
    expect(s.nodes.sub?.iterations?.['1']).toMatchObject({ status: 'RUNNING', childInstanceId: 'c1' });
    expect(s.nodes.sub?.childInstanceId ?? null).toBeNull();
  });

  it('marks a stopped run cancelled', () => {
    expect(runReducer(started(), { kind: 'stopped' })?.status).toBe('CANCELLED');
  });

  it('leaves no node or iteration running once the run has ended', () => {
    let s = started();
    s = runReducer(s, nodeMsg('done', 'COMPLETED')) as RunView;
    s = runReducer(s, nodeMsg('slow', 'RUNNING')) as RunView;
    s = runReducer(s, nodeMsg('body', 'COMPLETED', 1, { iteration: '0' })) as RunView;
    s = runReducer(s, nodeMsg('body', 'RETRYING', 1, { iteration: '1', nextAttemptAt: 200 })) as RunView;
    const before = s.nodes.done;
    s = runReducer(s, { kind: 'status', instanceID: 'r1', status: 'FAILED', output: null, outputTruncated: null, error: 'boom' }) as RunView;
    expect(s.nodes.slow?.status).toBe('CANCELLED');
    expect(s.nodes.done).toBe(before); // terminal ones are kept as they were
    expect(s.nodes.body?.iterations?.['0']?.status).toBe('COMPLETED');
    expect(s.nodes.body?.iterations?.['1']).toMatchObject({ status: 'CANCELLED', nextAttemptAt: null });
    expect(displayStatus(s.nodes.body)).toBe('CANCELLED');
    const running = runReducer(started(), nodeMsg('x', 'RUNNING')) as RunView;
    expect(runReducer(running, { kind: 'stopped' })?.nodes.x?.status).toBe('CANCELLED');
    const snap = runReducer(running, { kind: 'snapshot', instanceID: 'r1', status: 'CANCELLED', slaBreachedAt: null, nodes: {} }) as RunView;
    expect(snap.nodes.x?.status).toBe('CANCELLED');
  });
});

describe('runReducer with node ids that are Object.prototype names', () => {
  // `record.toString` would be typed as Object's method: read by a string key.
  const at = <T,>(record: Readonly<Record<string, T>> | null | undefined, key: string): T | undefined => record?.[key];
  const HOSTILE = ['__proto__', 'constructor', 'toString'] as const;

  it('keeps each as a node of its own, from updates, a snapshot and the REST detail', () => {
    let s = started();
    expect(s.nodes.constructor).toBeUndefined(); // nothing inherited before any update
    for (const id of HOSTILE) {
      s = runReducer(s, nodeMsg(id, 'RUNNING')) as RunView;
      s = runReducer(s, nodeMsg(id, 'COMPLETED', 1, { output: { from: id }, at: 101 })) as RunView;
    }
    expect(Object.keys(s.nodes).sort()).toEqual([...HOSTILE].sort());
    for (const id of HOSTILE) expect(s.nodes[id]).toMatchObject({ status: 'COMPLETED', output: { from: id } });
    expect(Object.getPrototypeOf(s.nodes)).toBeNull();
    const outputs = completedOutputs(s);
    expect(Object.keys(outputs).sort()).toEqual([...HOSTILE].sort());
    expect(outputs.__proto__).toEqual({ from: '__proto__' });

    // Parsed JSON (what REST and Socket.IO hand over) has `__proto__` as an own key.
    const nodes = JSON.parse(
      '{"__proto__": {"status": "COMPLETED", "attempt": 1, "startedAt": 1, "completedAt": 2, "output": 1, "error": null},' +
        ' "toString": {"status": "RUNNING", "attempt": 1, "startedAt": 1, "completedAt": null, "output": null, "error": null,' +
        ' "iterations": {"constructor": {"status": "FAILED", "attempt": 1, "startedAt": 1, "completedAt": 2, "output": null, "error": "x"}}}}',
    ) as RunView['nodes'];
    const snap = runReducer(started(), { kind: 'snapshot', instanceID: 'r1', status: 'RUNNING', slaBreachedAt: null, nodes }) as RunView;
    expect(snap.nodes.__proto__?.status).toBe('COMPLETED');
    expect(snap.nodes.constructor).toBeUndefined();
    expect(displayStatus(at(snap.nodes, 'toString'))).toBe('FAILED'); // a loop-body node's status sums its iterations up
    const detail = runReducer(null, {
      kind: 'detail',
      detail: { instanceId: 'r1', workflowId: null, version: null, isTest: true, status: 'RUNNING', trigger: 'test', error: null, createdAt: 0, startedAt: 0, completedAt: null, slaBreachedAt: null, input: null, output: null, nodes },
    }) as RunView;
    expect(detail.nodes.__proto__?.output).toBe(1);
    expect(at(at(detail.nodes, 'toString')?.iterations, 'constructor')?.status).toBe('FAILED');
    expect(at(at(detail.nodes, 'toString')?.iterations, 'toString')).toBeUndefined();
  });

  it('folds loop iterations whose node id is __proto__', () => {
    let s = started();
    s = runReducer(s, nodeMsg('__proto__', 'COMPLETED', 1, { iteration: '0', output: 'a' })) as RunView;
    s = runReducer(s, nodeMsg('__proto__', 'RUNNING', 1, { iteration: '1' })) as RunView;
    expect(Object.keys(s.nodes.__proto__?.iterations ?? {})).toEqual(['0', '1']);
    expect(displayStatus(s.nodes.__proto__)).toBe('RUNNING');
  });
});
