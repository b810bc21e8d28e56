/** Who is signed in: loaded once from GET /api/auth/me; a 401 anywhere sends the user to /login. */
import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from 'react';
import { Navigate, Outlet, useLocation, useNavigate } from 'react-router';

import { setUnauthorizedHandler } from '../api/client';
import { auth } from '../api/endpoints';
import type { Session } from '../api/types';

type SessionState = {
  session: Session | null;
  loading: boolean;
  signIn: (email: string, password: string) => Promise<void>;
  signOut: () => Promise<void>;
};

const SessionContext = createContext<SessionState | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | null>(null);
  const [loading, setLoading] = useState(true);

  useEffect(() => {
    auth
      .me()
      .then(setSession)
      .catch(() => setSession(null))
      .finally(() => setLoading(false));
  }, []);

  const signIn = useCallback(async (email: string, password: string) => {
    setSession(await auth.login(email, password));
  }, []);

  const signOut = useCallback(async () => {
    try {
      await auth.logout();
    } finally {
      setSession(null);
    }
  }, []);

  return <SessionContext.Provider value={{ session, loading, signIn, signOut }}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession outside <SessionProvider>');
  return value;
}

/** Routes below need a session; without one, go to /login and come back afterwards. */
export function RequireSession() {
  const { session, loading } = useSession();
  const location = useLocation();
  const navigate = useNavigate();
  useEffect(() => {
    setUnauthorizedHandler(() => navigate(`/login?next=${encodeURIComponent(location.pathname + location.search)}`));
    return () => setUnauthorizedHandler(null);
  }, [navigate, location.pathname, location.search]);
  if (loading) return <div className="page page--center muted">Loading…</div>;
  if (!session) return <Navigate to={`/login?next=${encodeURIComponent(location.pathname + location.search)}`} replace />;
  return <Outlet />;
}
