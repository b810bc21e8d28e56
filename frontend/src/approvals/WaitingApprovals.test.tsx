// @vitest-environment happy-dom
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import type { NodeUpdateMessage } from '../api/realtime-types';
import type { Approval } from '../api/types';
import type { NodeRun } from '../runs/runReducer';
import { dictOf } from '../shared/dict';
import { noticeRunUpdate, useApprovals } from './approvalsStore';
import { WaitingApprovals } from './WaitingApprovals';

afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
});

const decisions = [{ email: 'bob@acme.test', decision: 'approve' as const, comment: null, at: 120 }];

function waitingNode(extra: Partial<NonNullable<NodeRun['waitingFor']>> = {}): NodeRun {
  return {
    status: 'WAITING',
    attempt: 1,
    startedAt: 1,
    completedAt: null,
    output: null,
    error: null,
    waitingFor: { resumeOn: 'approval', url: '/approvals/a1', approvalId: 'a1', until: 999, ...extra },
  };
}

function nodeMsg(extra: Partial<NodeUpdateMessage>): NodeUpdateMessage {
  return { kind: 'node', instanceID: 'run-1', nodeID: 'ok', iteration: '', status: 'WAITING', attempt: 1, output: null, outputTruncated: null, error: null, at: 100, pinned: false, nextAttemptAt: null, childInstanceId: null, waitingFor: null, ...extra };
}

describe('WaitingApprovals', () => {
  it('says "1 of 2 approvals" once a counted decision was announced, nothing before', () => {
    const { rerender } = render(<WaitingApprovals nodes={dictOf({ ok: waitingNode() })} labels={() => 'Sign off'} />);
    expect(screen.queryByTestId('approval-progress')).toBeNull();
    rerender(<WaitingApprovals nodes={dictOf({ ok: waitingNode({ required: 2, decisions }) })} labels={() => 'Sign off'} />);
    expect(screen.getByTestId('approval-progress').textContent).toContain('1 of 2 approvals');
  });
});

describe('noticeRunUpdate', () => {
  it('re-reads the badge on a live approval update and on a listed approval moving on, not on other nodes', () => {
    const refresh = vi.fn(async () => undefined);
    const listed = { instanceId: 'run-1', nodeId: 'ok', iteration: '' } as Approval;
    useApprovals.setState({ items: [listed], refresh });
    noticeRunUpdate(nodeMsg({ nodeID: 'other', status: 'COMPLETED' }));
    expect(refresh).not.toHaveBeenCalled();
    noticeRunUpdate(nodeMsg({ waitingFor: { resumeOn: 'approval', url: '/approvals/a1', approvalId: 'a1', until: 999, required: 2, decisions } }));
    expect(refresh).toHaveBeenCalledTimes(1);
    noticeRunUpdate(nodeMsg({ status: 'COMPLETED' })); // decided elsewhere: it leaves the list
    expect(refresh).toHaveBeenCalledTimes(2);
  });
});
