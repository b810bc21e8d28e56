/** "Test connection": runs the API's probe and shows `{ok, message, latencyMs}` beside the button. */
import { useState } from 'react';

import { fieldErrors, type FieldErrors } from '../shared/fieldErrors';
import type { ConnectionTest } from './api';

export function ConnectionTestButton({ run, onErrors }: { run: () => Promise<ConnectionTest>; onErrors: (errors: FieldErrors) => void }) {
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ConnectionTest | null>(null);
  const test = async () => {
    setBusy(true);
    setResult(null);
    try {
      setResult(await run());
    } catch (err) {
      const errors = fieldErrors(err);
      onErrors(errors);
      setResult({ ok: false, message: errors.general ?? 'The form has errors: see the fields.', latencyMs: 0 });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="connection-test">
      <button type="button" className="btn" disabled={busy} onClick={() => void test()} data-testid="connection-test">
        {busy ? 'Testing…' : 'Test connection'}
      </button>
      {result && (
        <span className={`connection-test__result ${result.ok ? 'is-ok' : 'text-error'}`} data-testid="connection-result" data-ok={String(result.ok)}>
          {result.ok ? '✓ ' : '✗ '}
          {result.message}
          {result.ok && <span className="muted"> · {Math.round(result.latencyMs)} ms</span>}
        </span>
      )}
    </div>
  );
}
