import { NavLink, Outlet } from 'react-router';

import { useApprovals } from '../approvals/approvalsStore';
import { useApprovalsPolling } from '../approvals/useApprovalsPolling';
import { useSession } from '../auth/session';
import { ThemeToggle } from '../shared/ui/ThemeToggle';

export function AppShell() {
  const { session, signOut } = useSession();
  useApprovalsPolling();
  const waiting = useApprovals((s) => s.items.length);
  const more = useApprovals((s) => s.more);
  return (
    <div className="shell">
      <header className="topbar">
        <NavLink to="/" className="brand" end>
          <span className="brand__mark">◆</span> Flowdeck
        </NavLink>
        <nav className="topbar__nav">
          <NavLink to="/" end data-testid="nav-workflows">
            Workflows
          </NavLink>
          <NavLink to="/runs" data-testid="nav-runs">
            Runs
          </NavLink>
          <NavLink to="/data-sources" data-testid="nav-data-sources">
            Data sources
          </NavLink>
          <NavLink to="/queries" data-testid="nav-queries">
            Queries
          </NavLink>
          <NavLink to="/approvals" data-testid="nav-approvals">
            Approvals
            {waiting > 0 && (
              <span className="nav-badge" data-testid="approvals-badge" aria-label={`${waiting} waiting for you`}>
                {more ? `${waiting}+` : waiting}
              </span>
            )}
          </NavLink>
          <NavLink to="/settings" data-testid="nav-settings">
            Settings
          </NavLink>
        </nav>
        <span className="spacer" />
        <ThemeToggle />
        {session && (
          <NavLink to="/account" className="topbar__user" data-testid="current-user" title="Account: API tokens, password">
            {session.user.email} <span className="muted">· {session.user.tenantName}</span>
          </NavLink>
        )}
        <button type="button" className="btn btn--ghost btn--small" onClick={() => void signOut()} data-testid="sign-out">
          Sign out
        </button>
      </header>
      <main className="shell__main">
        <Outlet />
      </main>
    </div>
  );
}
