// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { MemoryRouter, Route, Routes } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { Approval } from '../api/types';
import type { NodeRun } from '../runs/runReducer';
import { sourceHandleIds } from '../graph/handles';
import { createNode, type EditorNodeOf } from '../graph/model';
import { ApprovalsPage } from './ApprovalsPage';
import { useApprovals } from './approvalsStore';
import { DecisionButtons } from './DecisionButtons';
import { waitingApprovals } from './WaitingApprovals';

const PENDING: Approval = {
  id: 'a1',
  instanceId: 'run-1',
  workflowId: 'wf-1',
  workflowTitle: 'Refunds',
  nodeId: 'ok',
  nodeLabel: 'Sign off',
  iteration: '',
  isTest: false,
  requestedBy: 'alice@acme.test',
  until: 2_000_000_000,
  required: 2,
  approvers: [],
  decisions: [{ email: 'carol@acme.test', decision: 'approve', comment: 'fine by me', at: 1_900_000_000 }],
  status: 'pending',
  canDecide: true,
};

type Call = { method: string; url: string; body: unknown };

function serve(answers: Record<string, () => { status: number; body: unknown }>): Call[] {
  const calls: Call[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string, init?: RequestInit) => {
      const method = init?.method ?? 'GET';
      calls.push({ method, url, body: init?.body ? JSON.parse(String(init.body)) : undefined });
      const answer = answers[`${method} ${url}`]?.() ?? { status: 404, body: { status_code: 404, detail: 'not here' } };
      return new Response(JSON.stringify(answer.body), { status: answer.status, headers: { 'content-type': 'application/json' } });
    }),
  );
  return calls;
}

function renderAt(path: string) {
  render(
    <MemoryRouter initialEntries={[path]}>
      <Routes>
        <Route path="/approvals" element={<ApprovalsPage />} />
        <Route path="/approvals/:approvalId" element={<ApprovalsPage />} />
      </Routes>
    </MemoryRouter>,
  );
}

beforeEach(() => useApprovals.setState({ items: [], more: false, loaded: false, error: null }));
afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe('ApprovalsPage', () => {
  it('lists what waits for the user and approves one with a comment', async () => {
    let pending = [PENDING];
    const calls = serve({
      'GET /api/approvals?limit=200': () => ({ status: 200, body: { items: pending, nextCursor: null } }),
      'POST /api/approvals/a1': () => {
        pending = [];
        return { status: 200, body: { ...PENDING, status: 'approved', canDecide: false } };
      },
    });
    renderAt('/approvals');
    expect(await screen.findByText('Sign off')).toBeTruthy();
    expect(screen.getByText(/in Refunds/)).toBeTruthy();
    expect(screen.getByText(/Requested by alice@acme.test/)).toBeTruthy();
    expect(screen.getByTestId('approval-decisions').textContent).toContain('1 of 2 approvals');
    expect(screen.getByTestId('approval-decisions').textContent).toContain('fine by me');

    fireEvent.change(screen.getByTestId('approval-comment'), { target: { value: 'ok for me' } });
    fireEvent.click(screen.getByTestId('approve'));
    await waitFor(() => expect(screen.getByText('Nothing waits for your approval.')).toBeTruthy());
    expect(calls.find((c) => c.method === 'POST')).toEqual({
      method: 'POST',
      url: '/api/approvals/a1',
      body: { decision: 'approve', comment: 'ok for me' },
    });
    expect(useApprovals.getState().items).toEqual([]); // the badge count follows the list
  });

  it('shows one approval by its id, and why the user may not decide it', async () => {
    serve({
      'GET /api/approvals?limit=200': () => ({ status: 200, body: { items: [], nextCursor: null } }),
      'GET /api/approvals/a1': () => ({
        status: 200,
        body: { ...PENDING, canDecide: false, cannotDecideBecause: 'you started this run, and this approval does not allow self-approval' },
      }),
    });
    renderAt('/approvals/a1');
    expect(await screen.findByTestId('approval-status')).toBeTruthy();
    expect(screen.getByTestId('approval-status').textContent).toBe(
      'Pending: you started this run, and this approval does not allow self-approval',
    );
    expect(screen.queryByTestId('approve')).toBeNull();
  });
});

describe('DecisionButtons', () => {
  it('on the canvas card: no comment, a refusal shown as the server words it', async () => {
    serve({
      'GET /api/approvals?limit=200': () => ({ status: 200, body: { items: [], nextCursor: null } }),
      'POST /api/approvals/a1': () => ({ status: 403, body: { status_code: 403, detail: 'you are not among this approval\'s approvers' } }),
    });
    render(<DecisionButtons approvalId="a1" compact />);
    expect(screen.queryByTestId('approval-comment')).toBeNull();
    fireEvent.click(screen.getByTestId('reject'));
    expect((await screen.findByTestId('approval-error')).textContent).toBe("you are not among this approval's approvers");
    expect(screen.getByTestId('approve')).toBeTruthy(); // still offered: nothing was decided
  });
});

describe('wait node handles', () => {
  it('an approval wait has a rejected handle, other waits do not', () => {
    const wait = createNode('wait', 'w', { x: 0, y: 0 }) as EditorNodeOf<'wait'>;
    expect(sourceHandleIds(wait)).toEqual(['success', 'timeout']);
    const approval = { ...wait, data: { ...wait.data, config: { resumeOn: 'approval' as const } } };
    expect(sourceHandleIds(approval)).toEqual(['success', 'timeout', 'rejected']);
  });
});

describe('waitingApprovals', () => {
  it('finds every waiting approval of a run, loop iterations too', () => {
    const base: NodeRun = { status: 'COMPLETED', attempt: 1, completedAt: null, error: null, output: null, startedAt: null };
    const waiting = (approvalId: string): NodeRun => ({
      ...base,
      status: 'WAITING',
      waitingFor: { resumeOn: 'approval', url: `/approvals/${approvalId}`, until: 1, approvalId },
    });
    const nodes: Record<string, NodeRun> = {
      start: base,
      hold: { ...base, status: 'WAITING', waitingFor: { resumeOn: 'webhook', url: '/resume/x', until: 1 } },
      ok: waiting('top'),
      body: { ...base, status: 'WAITING', iterations: { '0': waiting('it0'), '1': base } },
    };
    expect(waitingApprovals(nodes)).toEqual([
      { nodeId: 'ok', iteration: '', approvalId: 'top', progress: null },
      { nodeId: 'body', iteration: '0', approvalId: 'it0', progress: null },
    ]);
  });
});
