/** The Approvals page: every pending approval the signed-in user may decide, with Approve / Reject and an
 * optional comment; `/approvals/:approvalId` shows one approval (the URL a workflow sends approvers). */
import { useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';

import { approvals } from '../api/endpoints';
import type { Approval } from '../api/types';
import { formatTime } from '../shared/format';
import { useApprovals } from './approvalsStore';
import { DecisionButtons } from './DecisionButtons';

const STATUS_TEXT: Record<Approval['status'], string> = {
  pending: 'Pending',
  approved: 'Approved',
  rejected: 'Rejected',
  closed: 'Closed (timed out, or its run ended)',
};

function Decisions({ approval }: { approval: Approval }) {
  const approved = approval.decisions.filter((d) => d.decision === 'approve').length;
  return (
    <div className="approval-card__decisions" data-testid="approval-decisions">
      <span className="muted">
        {approved} of {approval.required} approval{approval.required === 1 ? '' : 's'}
      </span>
      {approval.decisions.length > 0 && (
        <ul>
          {approval.decisions.map((d) => (
            <li key={`${d.email}-${d.at}`}>
              {d.email} {d.decision === 'approve' ? 'approved' : 'rejected'} · {formatTime(d.at)}
              {d.comment && <q> {d.comment}</q>}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function ApprovalCard({ approval, onDecided }: { approval: Approval; onDecided?: (a: Approval) => void }) {
  return (
    <article className="approval-card" data-testid="approval-card" data-approval-id={approval.id}>
      <header className="approval-card__head">
        <strong data-testid="approval-node">{approval.nodeLabel}</strong>
        <span className="muted">
          {' '}
          in {approval.workflowTitle ?? 'a test run'}
          {approval.isTest && ' (test run)'}
          {approval.iteration && ` · item ${approval.iteration}`}
        </span>
      </header>
      <div className="approval-card__meta muted">
        {approval.requestedBy ? `Requested by ${approval.requestedBy}` : 'Started by a webhook or schedule'}
        {approval.until && ` · until ${formatTime(approval.until)}`} ·{' '}
        <Link to={`/runs/${encodeURIComponent(approval.instanceId)}`} data-testid="approval-run-link">
          Open the run
        </Link>
      </div>
      <Decisions approval={approval} />
      {approval.canDecide ? (
        <DecisionButtons approvalId={approval.id} onDecided={onDecided} />
      ) : (
        <p className="muted" data-testid="approval-status">
          {STATUS_TEXT[approval.status]}
          {approval.status === 'pending' && approval.cannotDecideBecause && `: ${approval.cannotDecideBecause}`}
        </p>
      )}
    </article>
  );
}

function OneApproval({ approvalId }: { approvalId: string }) {
  const [approval, setApproval] = useState<Approval | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    approvals.get(approvalId).then(
      (a) => live && setApproval(a),
      (err: unknown) => live && setError(err instanceof Error ? err.message : String(err)),
    );
    return () => {
      live = false;
    };
  }, [approvalId]);
  if (error) return <p className="text-error">{error}</p>;
  if (!approval) return <p className="muted">Loading…</p>;
  return <ApprovalCard approval={approval} onDecided={setApproval} />;
}

export function ApprovalsPage() {
  const { approvalId } = useParams();
  const { items, loaded, error, refresh } = useApprovals();
  useEffect(() => {
    void refresh();
  }, [refresh]);
  return (
    <div className="page page--narrow" data-testid="approvals-page">
      <div className="page__head">
        <h1>Approvals</h1>
        {approvalId && <Link to="/approvals">All approvals waiting for you</Link>}
      </div>
      {approvalId ? (
        <OneApproval approvalId={approvalId} />
      ) : (
        <>
          {error && <p className="text-error">{error}</p>}
          {loaded && items.length === 0 && <p className="empty muted">Nothing waits for your approval.</p>}
          {items.map((a) => (
            <ApprovalCard key={a.id} approval={a} />
          ))}
        </>
      )}
    </div>
  );
}
