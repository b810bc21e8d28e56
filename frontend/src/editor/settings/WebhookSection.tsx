/** The workflow's webhook (SPEC §8): its URL, the secret (generated or rotated, shown once) and a curl example. */
import { useCallback, useEffect, useState } from 'react';

import { ApiError } from '../../api/client';
import { webhooks } from '../../api/endpoints';
import type { WebhookInfo } from '../../api/types';
import { formatTime } from '../../shared/format';
import { errorMessage, toast } from '../../shared/toasts';
import { CopyIcon } from '../../shared/ui/icons';
import { buildCurl, MAX_WAIT_SECONDS, SECRET_HEADER, SECRET_PLACEHOLDER, webhookUrl } from '../../triggers/curl';
import { useEditor } from '../storeContext';
import { copyText } from '../../shared/copy';

type Load = { state: 'loading' } | { state: 'ready'; info: WebhookInfo } | { state: 'unavailable' } | { state: 'error'; message: string };

export function WebhookSection({ workflowId, readOnly }: { workflowId: string; readOnly: boolean }) {
  const [load, setLoad] = useState<Load>({ state: 'loading' });
  const [secret, setSecret] = useState<string | null>(null);
  const [confirmRotate, setConfirmRotate] = useState(false);
  const [busy, setBusy] = useState(false);
  const [wait, setWait] = useState(true);
  const testInput = useEditor((s) => s.testInput);

  const refresh = useCallback(() => {
    webhooks
      .get(workflowId)
      .then((info) => setLoad({ state: 'ready', info }))
      .catch((err: unknown) => {
        // 404/405 from a server without the webhook routes: say so instead of an error.
        if (err instanceof ApiError && (err.status === 404 || err.status === 405)) setLoad({ state: 'unavailable' });
        else setLoad({ state: 'error', message: errorMessage(err) });
      });
  }, [workflowId]);

  useEffect(refresh, [refresh]);

  const rotate = async () => {
    setBusy(true);
    try {
      const created = await webhooks.rotateSecret(workflowId);
      setSecret(created.secret);
      setConfirmRotate(false);
      setLoad((l) => ({
        state: 'ready',
        info: { ...(l.state === 'ready' ? l.info : { createdAt: null, lastUsedAt: null }), url: created.url, hasSecret: true, createdAt: Date.now() / 1000 },
      }));
      toast('success', 'New webhook secret: copy it now, it is shown only once.');
      refresh();
    } catch (err) {
      toast('error', `Could not make a secret: ${errorMessage(err)}`);
    } finally {
      setBusy(false);
    }
  };

  const origin = window.location.origin;
  const path = load.state === 'ready' ? load.info.url : `/hooks/${workflowId}`;
  const url = webhookUrl(origin, path);
  const curl = buildCurl({ origin, path, secret, body: testInput, waitSeconds: wait ? MAX_WAIT_SECONDS : null });
  const hasSecret = load.state === 'ready' && load.info.hasSecret;

  return (
    <section className="settings-section" data-testid="webhook" data-state={load.state} data-has-secret={hasSecret}>
      <h3 className="section-title">Webhook</h3>
      {load.state === 'loading' && <div className="muted small">Loading…</div>}
      {load.state === 'unavailable' && (
        <div className="warning-box small" data-testid="webhook-unavailable">
          This server does not offer webhooks yet.
        </div>
      )}
      {load.state === 'error' && <div className="error-box small">Could not read the webhook: {load.message}</div>}
      {load.state === 'ready' && (
        <>
          <p className="muted small">
            <code>POST</code> a JSON body (the run input) with the secret in the <code>{SECRET_HEADER}</code> header to start a production
            run of the saved version. <code>?wait=SECONDS</code> (at most {MAX_WAIT_SECONDS}) answers with the output if the run finishes in time.
          </p>
          <div className="field">
            <span className="field__label">URL</span>
            <div className="copy-row">
              <input className="input input--mono" readOnly value={url} onFocus={(e) => e.target.select()} data-testid="webhook-url" aria-label="Webhook URL" />
              <button type="button" className="btn btn--small" onClick={() => void copyText(url, 'URL')} data-testid="webhook-copy-url">
                <CopyIcon /> Copy
              </button>
            </div>
          </div>
          <div className="small muted" data-testid="webhook-secret-status">
            {load.info.hasSecret
              ? `Secret set${load.info.createdAt ? ` ${formatTime(load.info.createdAt)}` : ''}; last used ${load.info.lastUsedAt ? formatTime(load.info.lastUsedAt) : 'never'}.`
              : 'No secret yet: the webhook refuses calls until one is generated.'}
          </div>
          {secret && (
            <div className="secret-once" data-testid="webhook-secret-box">
              <p className="small">Copy the secret now: it is shown only once.</p>
              <div className="copy-row">
                <input className="input input--mono" readOnly value={secret} onFocus={(e) => e.target.select()} data-testid="webhook-secret" aria-label="Webhook secret" />
                <button type="button" className="btn btn--small" onClick={() => void copyText(secret, 'Secret')} data-testid="webhook-copy-secret">
                  <CopyIcon /> Copy
                </button>
              </div>
            </div>
          )}
          {!readOnly && (
            <div className="btn-row">
              {!load.info.hasSecret ? (
                <button type="button" className="btn btn--small btn--primary" disabled={busy} onClick={() => void rotate()} data-testid="webhook-generate">
                  Generate secret
                </button>
              ) : confirmRotate ? (
                <>
                  <span className="small">The old secret stops working at once.</span>
                  <button type="button" className="btn btn--small btn--danger" disabled={busy} onClick={() => void rotate()} data-testid="webhook-rotate-confirm">
                    Rotate now
                  </button>
                  <button type="button" className="btn btn--small btn--ghost" onClick={() => setConfirmRotate(false)}>
                    Cancel
                  </button>
                </>
              ) : (
                <button type="button" className="btn btn--small" onClick={() => setConfirmRotate(true)} data-testid="webhook-rotate">
                  Rotate secret
                </button>
              )}
            </div>
          )}
          <div className="field">
            <span className="field__label">
              Example{' '}
              <label className="small muted webhook-wait">
                <input type="checkbox" checked={wait} onChange={(e) => setWait(e.target.checked)} data-testid="webhook-wait" /> wait for the output
              </label>
            </span>
            <div className="copy-row copy-row--top">
              <textarea className="input input--mono" readOnly rows={5} value={curl} onFocus={(e) => e.target.select()} data-testid="webhook-curl" aria-label="curl example" />
              <button type="button" className="btn btn--small" onClick={() => void copyText(curl, 'Command')} data-testid="webhook-copy-curl">
                <CopyIcon /> Copy
              </button>
            </div>
            <span className="field__hint">
              {secret ? 'Contains the secret shown above.' : <>Set <code>{SECRET_PLACEHOLDER.slice(1)}</code> in your shell first.</>} The body is the editor’s test input.
            </span>
          </div>
        </>
      )}
    </section>
  );
}
