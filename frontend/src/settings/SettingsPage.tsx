/** /settings: the tenant's settings. Retention: how long finished runs are kept before the pruner deletes them. */
import { useEffect, useState, type FormEvent } from 'react';

import { Field } from '../editor/inspector/fields';
import { errorAt, fieldErrors, NO_ERRORS, unshownErrors, type FieldErrors } from '../shared/fieldErrors';
import { errorMessage, toast } from '../shared/toasts';
import { retention, type Retention, type RetentionBody } from './api';

type Draft = Record<keyof RetentionBody, string>;
const FIELDS: readonly (keyof RetentionBody)[] = ['maxAgeDays', 'testMaxAgeDays', 'maxRuns'];

function draftOf(r: Retention): Draft {
  return { maxAgeDays: String(r.maxAgeDays), testMaxAgeDays: String(r.testMaxAgeDays), maxRuns: String(r.maxRuns) };
}

/** A whole number as typed, else the text itself (the server names what is wrong with it); blank: null. */
function valueOf(text: string): number | string | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const n = Number(trimmed);
  return Number.isFinite(n) ? n : trimmed;
}

function forever(value: number, unit: string): string {
  return value === 0 ? 'kept forever' : `${value.toLocaleString()} ${unit}`;
}

function RetentionSection() {
  const [saved, setSaved] = useState<Retention | null>(null);
  const [draft, setDraft] = useState<Draft | null>(null);
  const [errors, setErrors] = useState<FieldErrors>(NO_ERRORS);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    retention
      .get()
      .then((r) => {
        setSaved(r);
        setDraft(draftOf(r));
      })
      .catch((err: unknown) => setLoadError(errorMessage(err)));
  }, []);

  const apply = (r: Retention, message: string) => {
    setSaved(r);
    setDraft(draftOf(r));
    setErrors(NO_ERRORS);
    toast('success', message);
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    if (!draft) return;
    setBusy(true);
    try {
      const body = { maxAgeDays: valueOf(draft.maxAgeDays), testMaxAgeDays: valueOf(draft.testMaxAgeDays), maxRuns: valueOf(draft.maxRuns) };
      apply(await retention.put(body), 'Retention saved: the next pruning pass (within a minute) follows it');
    } catch (err) {
      setErrors(fieldErrors(err));
    } finally {
      setBusy(false);
    }
  };

  const reset = async () => {
    setBusy(true);
    try {
      apply(await retention.reset(), 'Retention is back to the server defaults');
    } catch (err) {
      setErrors(fieldErrors(err));
    } finally {
      setBusy(false);
    }
  };

  const edit = (field: keyof RetentionBody, value: string) => {
    if (draft) setDraft({ ...draft, [field]: value });
  };

  const general = unshownErrors(errors, FIELDS);
  const defaults = saved?.defaults;
  return (
    <section className="account-section" data-testid="retention-section">
      <h2>Run retention</h2>
      <p className="muted">
        Finished runs (completed, failed, cancelled) older than these ages, or past the newest runs kept, are deleted with their
        logs. Runs still queued, running or waiting are never deleted, nor the latest completed run a widget shows. 0 keeps
        forever.
      </p>
      {loadError && <div className="error-box">{loadError}</div>}
      {draft && defaults && saved && (
        <form className="data-form" onSubmit={(e) => void save(e)} noValidate>
          <p data-testid="retention-source">
            {saved.custom ? 'This tenant’s own policy.' : 'The server defaults (this tenant has not set its own).'}
          </p>
          <Field label="Production runs: keep for (days)" error={errorAt(errors, 'maxAgeDays')} hint={`Server default: ${forever(defaults.maxAgeDays, 'days')}`}>
            <input className="input" type="number" min={0} value={draft.maxAgeDays} onChange={(e) => edit('maxAgeDays', e.target.value)} data-testid="retention-days" />
          </Field>
          <Field label="Test runs: keep for (days)" error={errorAt(errors, 'testMaxAgeDays')} hint={`Server default: ${forever(defaults.testMaxAgeDays, 'days')}`}>
            <input className="input" type="number" min={0} value={draft.testMaxAgeDays} onChange={(e) => edit('testMaxAgeDays', e.target.value)} data-testid="retention-test-days" />
          </Field>
          <Field label="Newest runs kept whatever their age" error={errorAt(errors, 'maxRuns')} hint={`Server default: ${forever(defaults.maxRuns, 'runs')}`}>
            <input className="input" type="number" min={0} value={draft.maxRuns} onChange={(e) => edit('maxRuns', e.target.value)} data-testid="retention-max-runs" />
          </Field>
          {general.length > 0 && <div className="error-box">{general.join(' ')}</div>}
          <div className="btn-row">
            <button type="submit" className="btn btn--primary" disabled={busy} data-testid="retention-save">
              Save
            </button>
            {saved.custom && (
              <button type="button" className="btn btn--ghost" disabled={busy} onClick={() => void reset()} data-testid="retention-reset">
                Use the server defaults
              </button>
            )}
          </div>
        </form>
      )}
    </section>
  );
}

export function SettingsPage() {
  return (
    <div className="page page--narrow" data-testid="settings-page">
      <div className="page__head">
        <h1>Settings</h1>
      </div>
      <RetentionSection />
    </div>
  );
}
