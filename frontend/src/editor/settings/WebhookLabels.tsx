/**
 * `options.webhookLabels`: labels a webhook's run takes from its JSON body (label name → a dotted path such as
 * `customer.id` or `items.0.sku`), so its runs can be searched by them. The query string's `?label.name=` wins.
 */
import { useEffect, useRef, useState } from 'react';

import type { WorkflowOptions } from '../../graph/convert';
import { useEditorStoreApi } from '../storeContext';
import { webhookLabelRowErrors, webhookLabelsOf, withWebhookLabels, type WebhookLabelRow } from './options';

const MAX_ROWS = 10; // FLOWDECK_MAX_RUN_LABELS' default; the server answers a 400 naming the setting beyond its own value

export function WebhookLabels({ options, problems, readOnly }: { options: WorkflowOptions | null; problems: Record<string, string>; readOnly: boolean }) {
  const store = useEditorStoreApi();
  const [rows, setRows] = useState<WebhookLabelRow[]>(() => webhookLabelsOf(options));
  const written = useRef(options?.webhookLabels);

  // Undo, redo or an import changed the option under the form: show what is saved.
  useEffect(() => {
    if (options?.webhookLabels !== written.current) {
      written.current = options?.webhookLabels;
      setRows(webhookLabelsOf(options));
    }
  }, [options]);

  const update = (next: WebhookLabelRow[]) => {
    setRows(next);
    const saved = withWebhookLabels(store.getState().options, next);
    written.current = saved?.webhookLabels;
    store.getState().updateWorkflow({ options: saved }, 'options.webhookLabels');
  };
  const errors = webhookLabelRowErrors(rows);

  return (
    <section className="settings-section" data-testid="webhook-labels">
      <h3 className="section-title">Labels from the webhook body</h3>
      <p className="muted small">
        Each run a webhook starts carries these labels, read from its JSON body (e.g. <code>customer.id</code>,{' '}
        <code>items.0.sku</code>); search runs by them with <code>label.name=value</code>. A path the body lacks gives no label.
      </p>
      {rows.map((row, index) => {
        const problem = errors[index] ?? problems[`options.webhookLabels.${row.name.trim()}`];
        return (
          <div className="field-row" key={index} data-testid="webhook-label-row">
            <input
              className={`input${problem ? ' has-error' : ''}`}
              value={row.name}
              placeholder="label name"
              aria-label={`Label ${index + 1} name`}
              readOnly={readOnly}
              onChange={(e) => update(rows.map((r, i) => (i === index ? { ...r, name: e.target.value } : r)))}
            />
            <input
              className="input input--mono"
              value={row.path}
              placeholder="customer.id"
              aria-label={`Label ${index + 1} body path`}
              readOnly={readOnly}
              onChange={(e) => update(rows.map((r, i) => (i === index ? { ...r, path: e.target.value } : r)))}
            />
            {!readOnly && (
              <button type="button" className="icon-btn" aria-label={`Remove label ${index + 1}`} onClick={() => update(rows.filter((_, i) => i !== index))}>
                ×
              </button>
            )}
            {problem && <span className="field__error">{problem}</span>}
          </div>
        );
      })}
      {!readOnly && rows.length < MAX_ROWS && (
        <button type="button" className="btn btn--small" data-testid="webhook-label-add" onClick={() => update([...rows, { name: '', path: '' }])}>
          Add a label
        </button>
      )}
    </section>
  );
}
