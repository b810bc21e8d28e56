/** Approve / Reject for one approval, with an optional comment: on the Approvals page, the canvas card of a
 * waiting approval node (test runs and the run page) and an approval's own page. A refusal (403, 409) is
 * shown as the server words it. */
import { useState } from 'react';

import type { Approval, ApprovalDecision } from '../api/types';
import { useApprovals } from './approvalsStore';

type Props = {
  approvalId: string;
  /** The canvas card: no comment box. */
  compact?: boolean;
  onDecided?: (approval: Approval) => void;
};

const DONE: Record<string, string> = {
  approved: 'Approved',
  rejected: 'Rejected',
  pending: 'Your approval was counted: more are required',
  closed: 'No longer pending',
};

export function DecisionButtons({ approvalId, compact = false, onDecided }: Props) {
  const decide = useApprovals((s) => s.decide);
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);

  const send = async (decision: ApprovalDecision) => {
    setBusy(true);
    try {
      const after = await decide(approvalId, decision, comment.trim() || undefined);
      setResult({ ok: true, text: DONE[after.status] ?? after.status });
      onDecided?.(after);
    } catch (err) {
      setResult({ ok: false, text: err instanceof Error ? err.message : String(err) });
    } finally {
      setBusy(false);
    }
  };

  if (result?.ok) {
    return (
      <div className="approval-result" data-testid="approval-result" role="status">
        {result.text}
      </div>
    );
  }
  return (
    <div className={`approval-actions nodrag nopan${compact ? ' approval-actions--compact' : ''}`} data-testid="approval-actions">
      {!compact && (
        <input
          className="input input--small"
          value={comment}
          placeholder="Comment (optional)"
          aria-label="Comment"
          maxLength={2000}
          data-testid="approval-comment"
          onChange={(e) => setComment(e.target.value)}
        />
      )}
      <div className="approval-actions__buttons">
        <button
          type="button"
          className="btn btn--small btn--primary"
          disabled={busy}
          data-testid="approve"
          onClick={(e) => {
            e.stopPropagation();
            void send('approve');
          }}
        >
          Approve
        </button>
        <button
          type="button"
          className="btn btn--small btn--danger"
          disabled={busy}
          data-testid="reject"
          onClick={(e) => {
            e.stopPropagation();
            void send('reject');
          }}
        >
          Reject
        </button>
      </div>
      {result && !result.ok && (
        <div className="field__error" data-testid="approval-error" role="alert">
          {result.text}
        </div>
      )}
    </div>
  );
}
