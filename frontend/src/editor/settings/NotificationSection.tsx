/**
 * On failure and on SLA breach (SPEC §2 `options.onFailure` / `options.onSlaBreach`): an error workflow of this
 * tenant to start and/or a URL to POST the signed payload to; the signing secret (made with the first URL,
 * shown once, rotatable) and a "send a test notification" button. The targets are saved with the workflow.
 */
import { useCallback, useEffect, useState } from 'react';

import { notifications, workflows } from '../../api/endpoints';
import type { NotificationTest, WorkflowSummary } from '../../api/types';
import type { WorkflowOptions } from '../../graph/convert';
import { copyText } from '../../shared/copy';
import { formatTime } from '../../shared/format';
import { errorMessage, toast } from '../../shared/toasts';
import { CopyIcon } from '../../shared/ui/icons';
import { Field } from '../inspector/fields';
import { useEditor, useEditorStoreApi } from '../storeContext';
import { notificationOf, notificationUrlError, withNotification, type NotificationKey } from './options';

const TARGETS: { key: NotificationKey; label: string }[] = [
  { key: 'onFailure', label: 'On failure' },
  { key: 'onSlaBreach', label: 'On SLA breach' },
];

type Secret = { state: 'loading' } | { state: 'ready'; hasSecret: boolean; createdAt: number | null } | { state: 'error'; message: string };

export function NotificationSection({
  workflowId,
  options,
  problems,
  readOnly,
}: {
  workflowId: string;
  options: WorkflowOptions | null;
  problems: Record<string, string>;
  readOnly: boolean;
}) {
  const store = useEditorStoreApi();
  const version = useEditor((s) => s.version);
  const [others, setOthers] = useState<WorkflowSummary[]>([]);
  const [secretState, setSecretState] = useState<Secret>({ state: 'loading' });
  const [shown, setShown] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<NotificationTest | null>(null);

  useEffect(() => {
    workflows
      .list()
      .then((page) => setOthers(page.items))
      .catch(() => setOthers([]));
  }, []);

  const refresh = useCallback(() => {
    notifications
      .get(workflowId)
      .then((info) => {
        setSecretState({ state: 'ready', hasSecret: info.hasSecret, createdAt: info.createdAt });
        if (info.secret) setShown(info.secret);
      })
      .catch((err: unknown) => setSecretState({ state: 'error', message: errorMessage(err) }));
  }, [workflowId]);

  // After each save: the first URL makes the secret, which the next read shows (once).
  useEffect(refresh, [refresh, version]);

  const set = (key: NotificationKey, field: 'workflowId' | 'url', value: string) =>
    store.getState().updateWorkflow({ options: withNotification(store.getState().options, key, field, value) }, `options.${key}.${field}`);

  const rotate = async () => {
    setBusy(true);
    try {
      const { secret } = await notifications.rotateSecret(workflowId);
      setShown(secret);
      toast('success', 'New notification secret: copy it now, it is shown only once.');
      refresh();
    } catch (err) {
      toast('error', `Could not make a secret: ${errorMessage(err)}`);
    } finally {
      setBusy(false);
    }
  };

  const sendTest = async () => {
    setBusy(true);
    setResult(null);
    try {
      const url = notificationOf(options, 'onFailure').url ?? notificationOf(options, 'onSlaBreach').url;
      setResult(await notifications.test(workflowId, url));
      refresh();
    } catch (err) {
      setResult({ url: '', ok: false, status: null, error: errorMessage(err) });
    } finally {
      setBusy(false);
    }
  };

  const anyUrl = Boolean(notificationOf(options, 'onFailure').url ?? notificationOf(options, 'onSlaBreach').url);
  return (
    <section className="settings-section" data-testid="notifications">
      <h3 className="section-title">Notifications</h3>
      <p className="muted small">
        Start an error workflow (its input is <code>{'{run, workflow, event}'}</code>) and/or POST that JSON to a URL, signed the{' '}
        Standard Webhooks way: <code>webhook-id</code>, <code>webhook-timestamp</code> and <code>webhook-signature: v1,…</code>{' '}
        (HMAC-SHA256 of id, timestamp and body with the secret below; the old <code>X-Flowdeck-Signature</code> is deprecated).
        Failed calls are retried for about 10 minutes.
      </p>
      {TARGETS.map(({ key, label }) => {
        const target = notificationOf(options, key);
        return (
          <div className="field-row" key={key} data-testid={`notify-${key}`}>
            <Field label={`${label}: start workflow`} error={problems[`options.${key}.workflowId`]}>
              <select
                className="input"
                value={target.workflowId ?? ''}
                disabled={readOnly}
                data-testid={`notify-${key}-workflow`}
                onChange={(e) => set(key, 'workflowId', e.target.value)}
              >
                <option value="">— none —</option>
                {others
                  .filter((w) => w.id !== workflowId || target.workflowId === w.id)
                  .map((w) => (
                    <option key={w.id} value={w.id}>
                      {w.title || w.id}
                    </option>
                  ))}
              </select>
            </Field>
            <Field label={`${label}: POST to URL`} error={notificationUrlError(target.url) ?? problems[`options.${key}.url`]}>
              <input
                className="input input--mono"
                value={target.url ?? ''}
                placeholder="https://example.com/flowdeck-alerts"
                readOnly={readOnly}
                data-testid={`notify-${key}-url`}
                onChange={(e) => set(key, 'url', e.target.value)}
              />
            </Field>
          </div>
        );
      })}
      {secretState.state === 'error' && <div className="error-box small">Could not read the notification secret: {secretState.message}</div>}
      {secretState.state === 'ready' && (
        <div className="small muted" data-testid="notify-secret-status">
          {secretState.hasSecret
            ? `Signing secret set${secretState.createdAt ? ` ${formatTime(secretState.createdAt)}` : ''}.`
            : 'No signing secret yet: saving the first URL makes one.'}
        </div>
      )}
      {shown && (
        <div className="secret-once" data-testid="notify-secret-box">
          <p className="small">Copy the signing secret now: it is shown only once.</p>
          <div className="copy-row">
            <input className="input input--mono" readOnly value={shown} onFocus={(e) => e.target.select()} data-testid="notify-secret" aria-label="Notification secret" />
            <button type="button" className="btn btn--small" onClick={() => void copyText(shown, 'Secret')}>
              <CopyIcon /> Copy
            </button>
          </div>
        </div>
      )}
      {!readOnly && (
        <div className="btn-row">
          <button type="button" className="btn btn--small" disabled={busy} onClick={() => void rotate()} data-testid="notify-rotate">
            {secretState.state === 'ready' && secretState.hasSecret ? 'Rotate secret' : 'Generate secret'}
          </button>
          <button type="button" className="btn btn--small" disabled={busy || !anyUrl} onClick={() => void sendTest()} data-testid="notify-test" title={anyUrl ? 'POST a signed sample payload to the URL' : 'Set a URL first'}>
            Send a test notification
          </button>
        </div>
      )}
      {result && (
        <div className={result.ok ? 'small' : 'error-box small'} data-testid="notify-test-result" data-ok={result.ok}>
          {result.ok ? `Delivered: the receiver answered ${result.status}.` : `Not delivered: ${result.error ?? 'no answer'}${result.status ? ` (HTTP ${result.status})` : ''}.`}
        </div>
      )}
    </section>
  );
}
