/** Try a saved query: one field per parameter, Run, and the result as a table. */
import { useState, type FormEvent } from 'react';

import { Field } from '../editor/inspector/fields';
import { errorAt, fieldErrors, NO_ERRORS, type FieldErrors } from '../shared/fieldErrors';
import { argumentValue, savedQueries, type PreviewResult, type SavedQuery } from './api';
import { ResultTable } from './ResultTable';

export function QueryTry({ query }: { query: SavedQuery }) {
  const [args, setArgs] = useState<Map<string, string>>(() => new Map());
  const [result, setResult] = useState<PreviewResult | null>(null);
  const [errors, setErrors] = useState<FieldErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);

  const run = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    try {
      const values = Object.create(null) as Record<string, unknown>;
      for (const name of query.parameters) values[name] = argumentValue(args.get(name) ?? '');
      setResult(await savedQueries.preview(query.id, values));
      setErrors(NO_ERRORS);
    } catch (err) {
      setResult(null);
      setErrors(fieldErrors(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="query-try" data-testid="query-try">
      <h2 className="section-title">Try it</h2>
      <form onSubmit={(e) => void run(e)}>
        {query.parameters.length === 0 && <p className="muted small">This query takes no parameters.</p>}
        <div className="field-grid">
          {query.parameters.map((name) => (
            <Field key={name} label={name} error={errorAt(errors, `args.${name}`)}>
              <input
                className="input input--mono"
                value={args.get(name) ?? ''}
                placeholder="text, or JSON: 42, true, [1, 2]"
                data-testid={`try-arg-${name}`}
                onChange={(e) => setArgs((old) => new Map(old).set(name, e.target.value))}
              />
            </Field>
          ))}
        </div>
        <button type="submit" className="btn btn--run" disabled={busy} data-testid="query-run">
          {busy ? 'Running…' : 'Run'}
        </button>
      </form>
      {errors.general && (
        <div className="error-box" data-testid="try-error">
          {errors.general}
        </div>
      )}
      {result && <ResultTable result={result} />}
    </section>
  );
}
