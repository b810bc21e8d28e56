import { useState, type FormEvent } from 'react';
import { Navigate, useNavigate, useSearchParams } from 'react-router';

import { ApiError } from '../api/client';
import { errorMessage } from '../shared/toasts';
import { useSession } from './session';

export function LoginPage() {
  const { session, signIn } = useSession();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const next = params.get('next') ?? '/';
  const safeNext = next.startsWith('/') && !next.startsWith('//') ? next : '/';

  if (session) return <Navigate to={safeNext} replace />;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(email, password);
      navigate(safeNext, { replace: true });
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'Wrong email or password.' : errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div className="login">
      <form className="login__card" onSubmit={(e) => void submit(e)} data-testid="login-form">
        <div className="brand brand--large">
          <span className="brand__mark">◆</span> Flowdeck
        </div>
        <p className="muted">Sign in to design and run workflows.</p>
        <label className="field">
          <span className="field__label">Email</span>
          <input className="input" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} data-testid="login-email" autoFocus />
        </label>
        <label className="field">
          <span className="field__label">Password</span>
          <input className="input" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} data-testid="login-password" />
        </label>
        {error && (
          <div className="error-box" data-testid="login-error">
            {error}
          </div>
        )}
        <button type="submit" className="btn btn--primary btn--block" disabled={busy} data-testid="login-submit">
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p className="muted small">
          First start? <code>flowdeck serve</code> printed a one-time login link, or create a user with <code>flowdeck users create</code>.
        </p>
      </form>
    </div>
  );
}
