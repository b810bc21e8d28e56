/** The run page's banner of the approvals its run waits for (every waiting approval node, and each loop
 * iteration of one), with Approve / Reject: the canvas card shows a loop body node only as a whole. */
import type { NodeRun } from '../runs/runReducer';
import type { Dict } from '../shared/dict';
import { DecisionButtons } from './DecisionButtons';

export type WaitingApproval = {
  nodeId: string;
  iteration: string;
  approvalId: string;
  /** "1 of 2 approvals": known once a decision was counted (announced live). */
  progress: { approved: number; required: number } | null;
};

/** Every WAITING approval of the run's nodes (a loop body node's iterations too), by node then iteration. */
export function waitingApprovals(nodes: Dict<NodeRun>): WaitingApproval[] {
  const found: WaitingApproval[] = [];
  const visit = (nodeId: string, iteration: string, state: NodeRun) => {
    const approvalId = state.waitingFor?.approvalId;
    const waitingFor = state.waitingFor;
    if (state.status === 'WAITING' && waitingFor?.resumeOn === 'approval' && approvalId) {
      const approved = (waitingFor.decisions ?? []).filter((d) => d.decision === 'approve').length;
      const progress = waitingFor.required && waitingFor.decisions ? { approved, required: waitingFor.required } : null;
      found.push({ nodeId, iteration, approvalId, progress });
    }
    for (const [key, it] of Object.entries(state.iterations ?? {})) visit(nodeId, key, it);
  };
  for (const [nodeId, state] of Object.entries(nodes)) visit(nodeId, '', state);
  return found;
}

export function WaitingApprovals({ nodes, labels }: { nodes: Dict<NodeRun>; labels: (nodeId: string) => string }) {
  const waiting = waitingApprovals(nodes);
  if (waiting.length === 0) return null;
  return (
    <div className="banner banner--info waiting-approvals" data-testid="run-waiting-approvals">
      {waiting.map((w) => (
        <div key={w.approvalId} className="waiting-approvals__item" data-testid="run-waiting-approval" data-approval-id={w.approvalId}>
          <span>
            Waiting for an approval: <strong>{labels(w.nodeId)}</strong>
            {w.iteration && <span className="muted"> · item {w.iteration}</span>}
            {w.progress && (
              <span className="muted" data-testid="approval-progress">
                {' '}
                · {w.progress.approved} of {w.progress.required} approvals
              </span>
            )}
          </span>
          <DecisionButtons key={w.approvalId} approvalId={w.approvalId} />
        </div>
      ))}
    </div>
  );
}
