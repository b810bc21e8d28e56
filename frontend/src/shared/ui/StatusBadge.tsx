import type { NodeStatus, RunStatus } from '../../api/types';

const LABELS: Record<string, string> = {
  PENDING: 'Pending',
  DISPATCHED: 'Queued',
  RUNNING: 'Running',
  WAITING: 'Waiting',
  RETRYING: 'Retrying',
  COMPLETED: 'Completed',
  FAILED: 'Failed',
  SKIPPED: 'Skipped',
  CANCELLED: 'Cancelled',
};

export function StatusBadge({ status, testId }: { status: RunStatus | NodeStatus; testId?: string }) {
  return (
    <span className={`badge badge--${status.toLowerCase()}`} data-testid={testId} data-status={status}>
      {LABELS[status] ?? status}
    </span>
  );
}
