/** Embed tokens of a saved widget: create (the URL and iframe snippet are shown once), list, revoke. */
import { useCallback, useEffect, useState } from 'react';

import { copyText } from '../../shared/copy';
import { formatTime } from '../../shared/format';
import { formatValue } from '../format';
import { errorMessage, toast } from '../../shared/toasts';
import { useConfirm } from '../../shared/ui/ConfirmDialog';
import { CopyIcon } from '../../shared/ui/icons';
import { widgetsApi } from '../api';
import type { CreatedEmbedToken, EmbedToken } from '../types';
import { iframeSnippet } from './config';

export function EmbedTokens({ widgetId, widgetName }: { widgetId: string; widgetName: string }) {
  const [tokens, setTokens] = useState<EmbedToken[] | null>(null);
  const [created, setCreated] = useState<CreatedEmbedToken | null>(null);
  const [days, setDays] = useState(365);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // When the list was loaded: a token past its expiry then is shown expired.
  const [now, setNow] = useState(() => Date.now() / 1000);
  const [confirm, confirmDialog] = useConfirm();

  const reload = useCallback(() => {
    widgetsApi
      .tokens(widgetId)
      .then((items) => {
        setTokens(items);
        setNow(Date.now() / 1000);
        setError(null);
      })
      .catch((err: unknown) => setError(errorMessage(err)));
  }, [widgetId]);

  useEffect(() => {
    setCreated(null);
    setTokens(null);
    reload();
  }, [reload]);

  const create = async () => {
    setBusy(true);
    try {
      const token = await widgetsApi.createToken(widgetId, days);
      setCreated(token);
      reload();
    } catch (err) {
      toast('error', `Could not create the embed link: ${errorMessage(err)}`);
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (t: EmbedToken) => {
    const ok = await confirm({
      title: 'Revoke embed link?',
      message: `Revoke the embed link ${t.prefix}…? Pages that show it stop working at once.`,
      confirmLabel: 'Revoke',
      danger: true,
    });
    if (!ok) return;
    try {
      await widgetsApi.revokeToken(widgetId, t.id);
      if (created?.id === t.id) setCreated(null);
      toast('success', 'Embed link revoked');
      reload();
    } catch (err) {
      toast('error', `Could not revoke: ${errorMessage(err)}`);
    }
  };

  const origin = window.location.origin;
  const url = created ? new URL(created.url || `/embed/${created.token}`, origin).href : '';
  const snippet = created ? iframeSnippet(origin, created.url || `/embed/${created.token}`, widgetName) : '';

  return (
    <section className="wd-embed" data-testid="embed-tokens">
      {confirmDialog}
      <div className="section-title">Embed</div>
      <div className="btn-row">
        <label className="small muted">
          Expires in{' '}
          <input className="input input--auto wd-days" type="number" min={1} max={3650} value={days} onChange={(e) => setDays(Number(e.target.value))} data-testid="embed-days" aria-label="Expires in days" /> days
        </label>
        <button type="button" className="btn btn--small btn--primary" onClick={() => void create()} disabled={busy || !(days >= 1 && days <= 3650)} data-testid="embed-create">
          Create embed link
        </button>
      </div>
      {created && (
        <div className="wd-created" data-testid="embed-created">
          <p className="small">Copy the link now: it is shown only once.</p>
          <div className="wd-copy">
            <input className="input input--mono" readOnly value={url} onFocus={(e) => e.target.select()} data-testid="embed-url" aria-label="Embed URL" />
            <button type="button" className="btn btn--small" onClick={() => void copyText(url, 'Link')} data-testid="embed-copy-url">
              <CopyIcon /> Link
            </button>
          </div>
          <div className="wd-copy">
            <textarea className="input input--mono" readOnly rows={3} value={snippet} onFocus={(e) => e.target.select()} data-testid="embed-snippet" aria-label="Iframe snippet" />
            <button type="button" className="btn btn--small" onClick={() => void copyText(snippet, 'Snippet')} data-testid="embed-copy-snippet">
              <CopyIcon /> Snippet
            </button>
          </div>
        </div>
      )}
      {error && <div className="error-box">{error}</div>}
      {tokens && tokens.length > 0 && (
        <table className="table table--compact" data-testid="embed-token-list">
          <thead>
            <tr>
              <th>Link</th>
              <th>Expires</th>
              <th>Last used</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {tokens.map((t) => {
              const state = t.revokedAt ? 'revoked' : t.expiresAt !== null && t.expiresAt < now ? 'expired' : 'active';
              return (
                <tr key={t.id} data-testid="embed-token" data-state={state}>
                  <td className="mono">{t.prefix}…</td>
                  <td>{state === 'revoked' ? <span className="muted">revoked {formatTime(t.revokedAt)}</span> : formatValue(t.expiresAt, 'date')}</td>
                  <td>{t.lastUsedAt ? formatTime(t.lastUsedAt) : <span className="muted">never</span>}</td>
                  <td className="row-actions">
                    {state !== 'revoked' && (
                      <button type="button" className="btn btn--small btn--danger-text" onClick={() => void revoke(t)} data-testid="embed-revoke">
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {tokens && tokens.length === 0 && !created && <p className="small muted">No embed links yet.</p>}
    </section>
  );
}
