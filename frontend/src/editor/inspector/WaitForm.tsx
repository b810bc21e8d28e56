/** The wait node's form (docs/waits.md): what resumes it, its timeout, and a form's fields. */
import { useState } from 'react';

import type { WaitConfig, WaitField, WaitFieldType } from '../../graph/model';
import { Field, NumberInput } from './fields';
import type { FormProps } from './forms';

const FIELD_TYPES: readonly WaitFieldType[] = ['string', 'number', 'boolean', 'select'];
const DAY = 24 * 3600;

function FieldsEditor({
  fields,
  onChange,
  readOnly,
  problemAt,
}: {
  fields: WaitField[];
  onChange: (fields: WaitField[], key?: string) => void;
  readOnly: boolean;
  problemAt: (path: string) => string | undefined;
}) {
  const edit = (i: number, patch: Partial<WaitField>, key: string) =>
    onChange(
      fields.map((f, j) => (j === i ? { ...f, ...patch } : f)),
      key,
    );
  return (
    <div className="branches" data-testid="wait-fields">
      <div className="field__label">Form fields</div>
      {problemAt('config.fields') && <span className="field__error">{problemAt('config.fields')}</span>}
      {fields.map((f, i) => {
        const errors = ['name', 'label', 'type', 'options'].map((k) => problemAt(`config.fields[${i}].${k}`)).filter(Boolean);
        return (
          <div className="branch" key={i} data-testid={`wait-field-${i}`}>
            <div className="branch__head">
              <input
                className="input"
                value={f.name}
                placeholder="name"
                aria-label="Field name"
                readOnly={readOnly}
                data-testid={`wait-field-${i}-name`}
                onChange={(e) => edit(i, { name: e.target.value }, `wait-field:${i}:name`)}
              />
              <select
                className="input"
                value={f.type}
                aria-label="Field type"
                disabled={readOnly}
                data-testid={`wait-field-${i}-type`}
                onChange={(e) => {
                  const type = e.target.value as WaitFieldType;
                  const next: WaitField = { ...f, type };
                  if (type === 'select') next.options = f.options ?? ['yes', 'no'];
                  else delete next.options;
                  onChange(fields.map((g, j) => (j === i ? next : g)));
                }}
              >
                {FIELD_TYPES.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
              {!readOnly && (
                <button type="button" className="icon-btn" aria-label="Remove field" onClick={() => onChange(fields.filter((_, j) => j !== i))}>
                  ✕
                </button>
              )}
            </div>
            <input
              className="input"
              value={f.label ?? ''}
              placeholder="Label shown on the form"
              aria-label="Field label"
              readOnly={readOnly}
              data-testid={`wait-field-${i}-label`}
              onChange={(e) => edit(i, { label: e.target.value }, `wait-field:${i}:label`)}
            />
            {f.type === 'select' && (
              <input
                className="input"
                value={(f.options ?? []).join(', ')}
                placeholder="Options, comma separated"
                aria-label="Field options"
                readOnly={readOnly}
                data-testid={`wait-field-${i}-options`}
                onChange={(e) =>
                  edit(
                    i,
                    {
                      options: e.target.value
                        .split(',')
                        .map((o) => o.trim())
                        .filter(Boolean),
                    },
                    `wait-field:${i}:options`,
                  )
                }
              />
            )}
            <label className="check">
              <input type="checkbox" checked={!!f.required} disabled={readOnly} onChange={(e) => edit(i, { required: e.target.checked }, `wait-field:${i}:required`)} />{' '}
              required
            </label>
            {errors.map((message) => (
              <span key={message} className="field__error">
                {message}
              </span>
            ))}
          </div>
        );
      })}
      {!readOnly && (
        <button
          type="button"
          className="btn btn--small"
          data-testid="wait-field-add"
          onClick={() => onChange([...fields, { name: `field${fields.length + 1}`, label: '', type: 'string', required: false }])}
        >
          + Field
        </button>
      )}
    </div>
  );
}

/** An approval's settings (docs/waits.md "Approvals"): who decides, how many approvals, self-approval. */
function ApprovalSettings({ config, put, readOnly, problemAt }: { config: WaitConfig; put: (next: WaitConfig, key?: string) => void; readOnly: boolean; problemAt: (path: string) => string | undefined }) {
  const approvers = config.approvers ?? [];
  const [text, setText] = useState(approvers.join(', '));
  const approverErrors = approvers.map((_, i) => problemAt(`config.approvers[${i}]`)).filter(Boolean);
  return (
    <>
      <Field
        label="Approvers"
        error={problemAt('config.approvers') ?? approverErrors[0]}
        hint="Emails of users of this tenant, comma separated; empty: any user. The user who started the run may not approve it unless self-approval is allowed."
      >
        <textarea
          className="input"
          rows={2}
          value={text}
          readOnly={readOnly}
          placeholder="anyone in the tenant"
          data-testid="wait-approvers"
          onChange={(e) => {
            setText(e.target.value);
            const list = e.target.value
              .split(/[,\s]+/)
              .map((v) => v.trim())
              .filter(Boolean);
            const next: WaitConfig = { ...config };
            if (list.length) next.approvers = list;
            else delete next.approvers;
            put(next, 'wait-approvers');
          }}
        />
      </Field>
      <Field label="Approvals required" error={problemAt('config.required')} hint="The node goes on at this many approvals; any rejection takes the rejected handle at once.">
        <NumberInput
          value={config.required}
          min={1}
          max={100}
          placeholder="1"
          readOnly={readOnly}
          testId="wait-required"
          onChange={(v) => {
            const next = { ...config };
            if (v === undefined) delete next.required;
            else next.required = v;
            put(next, 'wait-required');
          }}
        />
      </Field>
      <label className="check">
        <input
          type="checkbox"
          checked={!!config.allowSelfApproval}
          disabled={readOnly}
          data-testid="wait-allow-self"
          onChange={(e) => {
            const next = { ...config };
            if (e.target.checked) next.allowSelfApproval = true;
            else delete next.allowSelfApproval;
            put(next);
          }}
        />{' '}
        allow self-approval
      </label>
      {problemAt('config.allowSelfApproval') && <span className="field__error">{problemAt('config.allowSelfApproval')}</span>}
    </>
  );
}

export function WaitForm({ node, setConfig, readOnly, problemAt }: FormProps<'wait'>) {
  const config = node.data.config;
  const put = (next: WaitConfig, key?: string) => setConfig(next, key);
  return (
    <>
      <Field
        label="Resume on"
        error={problemAt('config.resumeOn')}
        hint={
          <>
            Its URL is <code>{`{{ ctx.run.resumeUrls.${node.id} }}`}</code> from the run's start, for earlier nodes to send.
          </>
        }
      >
        <select
          className="input"
          value={config.resumeOn}
          disabled={readOnly}
          data-testid="wait-resume-on"
          onChange={(e) => {
            const resumeOn = e.target.value as WaitConfig['resumeOn'];
            const next: WaitConfig = { ...config, resumeOn };
            if (resumeOn === 'form') next.fields = config.fields ?? [];
            else delete next.fields;
            if (resumeOn !== 'approval') {
              delete next.approvers;
              delete next.required;
              delete next.allowSelfApproval;
            }
            put(next);
          }}
        >
          <option value="webhook">a call of its URL (POST /resume/…)</option>
          <option value="form">a form submission (/forms/…)</option>
          <option value="approval">an approval by people of this tenant</option>
        </select>
      </Field>
      <Field label="Timeout (seconds)" error={problemAt('config.timeoutSeconds')} hint="Then the timeout handle is taken (default 7 days, at most 30 days). No worker is held while waiting.">
        <NumberInput
          value={config.timeoutSeconds}
          min={1}
          max={30 * DAY}
          placeholder={String(7 * DAY)}
          readOnly={readOnly}
          testId="wait-timeout"
          onChange={(v) => {
            const next = { ...config };
            if (v === undefined) delete next.timeoutSeconds;
            else next.timeoutSeconds = v;
            put(next, `wait-timeout:${node.id}`);
          }}
        />
      </Field>
      {config.resumeOn === 'approval' && <ApprovalSettings config={config} put={(next, key) => put(next, key && `${key}:${node.id}`)} readOnly={readOnly} problemAt={problemAt} />}
      {config.resumeOn === 'form' && (
        <FieldsEditor fields={config.fields ?? []} onChange={(fields, key) => put({ ...config, fields }, key && `${key}:${node.id}`)} readOnly={readOnly} problemAt={problemAt} />
      )}
    </>
  );
}
