/** Keeps the approvals list fresh while the app is open: read at once, then every APPROVALS_REFRESH_MS while
 * the tab is visible, and again when the tab comes back. */
import { useEffect } from 'react';

import { APPROVALS_REFRESH_MS, useApprovals } from './approvalsStore';

export function useApprovalsPolling(): void {
  const refresh = useApprovals((s) => s.refresh);
  useEffect(() => {
    void refresh();
    const timer = window.setInterval(() => {
      if (document.visibilityState === 'visible') void refresh();
    }, APPROVALS_REFRESH_MS);
    const onVisible = () => {
      if (document.visibilityState === 'visible') void refresh();
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      window.clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [refresh]);
}
