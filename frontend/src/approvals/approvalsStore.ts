/** The approvals waiting for the signed-in user: one store behind the navigation badge and the Approvals page. */
import { create } from 'zustand';

import { approvals } from '../api/endpoints';
import type { RealtimeMessage } from '../api/realtime-types';
import type { Approval, ApprovalDecision } from '../api/types';

/** How often the badge re-reads the list while the tab is visible (ms); a decision made here refreshes it at once. */
export const APPROVALS_REFRESH_MS = 15_000;

type ApprovalsState = {
  items: Approval[];
  /** More wait than the first page holds (the badge says 200+). */
  more: boolean;
  loaded: boolean;
  error: string | null;
  refresh(): Promise<void>;
  /** Decide, then re-read the list; resolves to the approval as it is after the decision (throws ApiError). */
  decide(id: string, decision: ApprovalDecision, comment?: string): Promise<Approval>;
};

export const useApprovals = create<ApprovalsState>()((set, get) => ({
  items: [],
  more: false,
  loaded: false,
  error: null,
  async refresh() {
    try {
      const page = await approvals.list();
      set({ items: page.items, more: !!page.nextCursor, loaded: true, error: null });
    } catch (err) {
      set({ loaded: true, error: err instanceof Error ? err.message : String(err) });
    }
  },
  async decide(id, decision, comment) {
    try {
      return await approvals.decide(id, decision, comment);
    } finally {
      void get().refresh();
    }
  },
}));

/** Re-read the list (the badge) at once when a watched run's update concerns an approval: one announced with a
 * decision counted, or a node of a listed approval that moved on (decided elsewhere, timed out, cancelled). */
export function noticeRunUpdate(msg: RealtimeMessage): void {
  if (msg.kind !== 'node') return;
  const { items, refresh } = useApprovals.getState();
  const listed = items.some((a) => a.instanceId === msg.instanceID && a.nodeId === msg.nodeID && a.iteration === msg.iteration);
  if (listed || msg.waitingFor?.resumeOn === 'approval') void refresh();
}
