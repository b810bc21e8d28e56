/** Small form controls shared by the node forms. */
import type { ReactNode } from 'react';

import { TemplateInput } from './TemplateInput';

export function Field({ label, hint, children, error }: { label: string; hint?: ReactNode; children: ReactNode; error?: string | undefined }) {
  return (
    <label className={`field${error ? ' has-error' : ''}`}>
      <span className="field__label">{label}</span>
      {children}
      {error && <span className="field__error">{error}</span>}
      {hint && !error && <span className="field__hint">{hint}</span>}
    </label>
  );
}

export function NumberInput({
  value,
  onChange,
  min,
  max,
  step,
  placeholder,
  testId,
  readOnly,
}: {
  value: number | undefined;
  onChange: (value: number | undefined) => void;
  min?: number;
  max?: number;
  step?: number;
  placeholder?: string;
  testId?: string;
  readOnly?: boolean;
}) {
  return (
    <input
      className="input"
      type="number"
      value={value ?? ''}
      min={min}
      max={max}
      step={step}
      placeholder={placeholder}
      data-testid={testId}
      readOnly={readOnly}
      onChange={(e) => onChange(e.target.value === '' ? undefined : Number(e.target.value))}
    />
  );
}

/** Rows of `name: template` (end output parameters, data-query arguments). */
export function KeyValueEditor({
  entries,
  onChange,
  paths,
  keyPlaceholder,
  testId,
  readOnly,
  fixedKeys = false,
}: {
  entries: Record<string, string>;
  onChange: (entries: Record<string, string>) => void;
  paths: readonly string[];
  keyPlaceholder: string;
  testId: string;
  readOnly: boolean;
  fixedKeys?: boolean;
}) {
  const rows = Object.entries(entries);
  const replaceAt = (index: number, key: string, value: string) => {
    const next: Record<string, string> = {};
    rows.forEach(([k, v], i) => {
      if (i === index) next[key] = value;
      else next[k] = v;
    });
    onChange(next);
  };
  const removeAt = (index: number) => onChange(Object.fromEntries(rows.filter((_, i) => i !== index)));
  const add = () => {
    let n = rows.length + 1;
    while (`param${n}` in entries) n++;
    onChange({ ...entries, [`param${n}`]: '' });
  };
  return (
    <div className="kv" data-testid={testId}>
      {rows.length === 0 && <div className="muted small">None yet.</div>}
      {rows.map(([key, value], i) => (
        <div className="kv__row" key={i}>
          <input
            className="input input--mono kv__key"
            value={key}
            placeholder={keyPlaceholder}
            readOnly={readOnly || fixedKeys}
            aria-label="name"
            onChange={(e) => replaceAt(i, e.target.value, value)}
          />
          <TemplateInput value={value} onChange={(v) => replaceAt(i, key, v)} paths={paths} placeholder="{{ ctx.input.id }}" readOnly={readOnly} ariaLabel={`value of ${key}`} />
          {!readOnly && !fixedKeys && (
            <button type="button" className="icon-btn" aria-label={`Remove ${key}`} onClick={() => removeAt(i)}>
              ×
            </button>
          )}
        </div>
      ))}
      {!readOnly && !fixedKeys && (
        <button type="button" className="btn btn--small btn--ghost" onClick={add} data-testid={`${testId}-add`}>
          + Add
        </button>
      )}
    </div>
  );
}
