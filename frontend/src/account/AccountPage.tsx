/** /account: who is signed in, API tokens (created — shown once with a copy button — and revoked), change password. */
import { useCallback, useEffect, useState, type FormEvent } from 'react';

import { useSession } from '../auth/session';
import { Field } from '../editor/inspector/fields';
import { copyText } from '../shared/copy';
import { errorAt, fieldErrors, NO_ERRORS, unshownErrors, type FieldErrors } from '../shared/fieldErrors';
import { formatTime, relativeTime } from '../shared/format';
import { errorMessage, toast } from '../shared/toasts';
import { useConfirm } from '../shared/ui/ConfirmDialog';
import { CopyIcon } from '../shared/ui/icons';
import { account, tokens, type ApiToken, type CreatedToken } from './api';

function TokensSection() {
  const [items, setItems] = useState<ApiToken[] | null>(null);
  const [created, setCreated] = useState<CreatedToken | null>(null);
  const [name, setName] = useState('');
  const [days, setDays] = useState('');
  const [errors, setErrors] = useState<FieldErrors>(NO_ERRORS);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [confirm, confirmDialog] = useConfirm();

  const reload = useCallback(() => {
    tokens
      .list()
      .then((page) => {
        setItems(page.items);
        setLoadError(null);
      })
      .catch((err: unknown) => setLoadError(errorMessage(err)));
  }, []);
  useEffect(reload, [reload]);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    const expires = days.trim() === '' ? null : Number(days);
    if (expires !== null && !(Number.isInteger(expires) && expires >= 1 && expires <= 3650)) {
      setErrors({ fields: Object.assign(Object.create(null) as Record<string, string>, { expiresInDays: 'a whole number of days, 1 to 3650' }), general: null });
      return;
    }
    try {
      setCreated(await tokens.create(name.trim(), expires));
      setName('');
      setDays('');
      setErrors(NO_ERRORS);
      reload();
    } catch (err) {
      setErrors(fieldErrors(err));
    }
  };

  const revoke = async (t: ApiToken) => {
    const ok = await confirm({
      title: 'Revoke token?',
      message: `Revoke the token “${t.name}” (${t.prefix}…)? Scripts that use it stop working at once.`,
      confirmLabel: 'Revoke',
      danger: true,
    });
    if (!ok) return;
    try {
      await tokens.revoke(t.id);
      if (created?.id === t.id) setCreated(null);
      toast('success', `Token “${t.name}” revoked`);
      reload();
    } catch (err) {
      toast('error', `Could not revoke: ${errorMessage(err)}`);
    }
  };

  const general = unshownErrors(errors, ['name', 'expiresInDays']);
  return (
    <section className="account-section" data-testid="tokens-section">
      {confirmDialog}
      <h2>API tokens</h2>
      <p className="muted">
        For scripts and the CLI: send <code>Authorization: Bearer &lt;token&gt;</code>. A token acts as you, in your tenant.
      </p>
      <form className="token-form" onSubmit={(e) => void create(e)} noValidate>
        <Field label="Name" error={errorAt(errors, 'name')}>
          <input className="input" value={name} placeholder="nightly export" onChange={(e) => setName(e.target.value)} data-testid="token-name" />
        </Field>
        <Field label="Expires in (days)" error={errorAt(errors, 'expiresInDays')}>
          <input className="input" type="number" min={1} max={3650} value={days} placeholder="never" onChange={(e) => setDays(e.target.value)} data-testid="token-days" />
        </Field>
        <button type="submit" className="btn btn--primary" data-testid="token-create">
          Create token
        </button>
      </form>
      {general.length > 0 && <div className="error-box">{general.join(' ')}</div>}
      {created && (
        <div className="secret-once" data-testid="token-created">
          <p>
            Copy the token “{created.name}” now: it is not shown again.
          </p>
          <div className="btn-row">
            <input className="input input--mono" readOnly value={created.token} onFocus={(e) => e.currentTarget.select()} data-testid="token-secret" />
            <button type="button" className="btn btn--small" onClick={() => void copyText(created.token, 'Token')} data-testid="token-copy">
              <CopyIcon /> Copy
            </button>
            <button type="button" className="btn btn--small btn--ghost" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      {loadError && <div className="error-box">{loadError}</div>}
      {items !== null && items.length === 0 && <p className="muted">No tokens.</p>}
      {items !== null && items.length > 0 && (
        <table className="table" data-testid="token-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Token</th>
              <th>Created</th>
              <th>Last used</th>
              <th>Expires</th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {items.map((t) => (
              <tr key={t.id} data-testid="token-row" data-name={t.name}>
                <td className="strong">{t.name}</td>
                <td className="mono">{t.prefix}…</td>
                <td>{formatTime(t.createdAt)}</td>
                <td>{t.lastUsedAt ? relativeTime(t.lastUsedAt) : <span className="muted">never</span>}</td>
                <td>{t.expiresAt ? formatTime(t.expiresAt) : <span className="muted">never</span>}</td>
                <td className="row-actions">
                  <button type="button" className="btn btn--small btn--ghost btn--danger-text" data-testid="token-revoke" onClick={() => void revoke(t)}>
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function PasswordSection() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [repeat, setRepeat] = useState('');
  const [errors, setErrors] = useState<FieldErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (next !== repeat) {
      setErrors({ fields: Object.assign(Object.create(null) as Record<string, string>, { repeatPassword: 'the two new passwords differ' }), general: null });
      return;
    }
    setBusy(true);
    try {
      await account.changePassword(current, next);
      setCurrent('');
      setNext('');
      setRepeat('');
      setErrors(NO_ERRORS);
      toast('success', 'Password changed. Your other sessions were signed out.');
    } catch (err) {
      setErrors(fieldErrors(err));
    } finally {
      setBusy(false);
    }
  };

  const general = unshownErrors(errors, ['currentPassword', 'newPassword', 'repeatPassword']);
  return (
    <section className="account-section" data-testid="password-section">
      <h2>Change password</h2>
      <form className="data-form" onSubmit={(e) => void submit(e)} noValidate>
        <Field label="Current password" error={errorAt(errors, 'currentPassword')}>
          <input className="input" type="password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)} data-testid="password-current" />
        </Field>
        <Field label="New password" error={errorAt(errors, 'newPassword')} hint="At least 8 characters.">
          <input className="input" type="password" autoComplete="new-password" value={next} onChange={(e) => setNext(e.target.value)} data-testid="password-new" />
        </Field>
        <Field label="New password, again" error={errorAt(errors, 'repeatPassword')}>
          <input className="input" type="password" autoComplete="new-password" value={repeat} onChange={(e) => setRepeat(e.target.value)} data-testid="password-repeat" />
        </Field>
        {general.length > 0 && <div className="error-box">{general.join(' ')}</div>}
        <div className="btn-row">
          <button type="submit" className="btn btn--primary" disabled={busy} data-testid="password-submit">
            Change password
          </button>
        </div>
      </form>
    </section>
  );
}

export function AccountPage() {
  const { session } = useSession();
  return (
    <div className="page page--narrow" data-testid="account-page">
      <div className="page__head">
        <h1>Account</h1>
      </div>
      {session && (
        <p>
          Signed in as <strong>{session.user.email}</strong> in <strong>{session.user.tenantName}</strong>.
        </p>
      )}
      <TokensSection />
      <PasswordSection />
    </div>
  );
}
