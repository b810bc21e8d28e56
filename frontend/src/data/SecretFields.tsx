/**
 * Write-only secrets: a stored secret shows as "set" and can be replaced or removed, never read.
 * The rows become the API body's `secrets` (`"set"` keeps, a string replaces, `null` removes).
 */
export type SecretRow = { name: string; value: string; stored: boolean; mode: 'keep' | 'replace' | 'remove' };

export function secretRows(stored: Record<string, unknown> | undefined): SecretRow[] {
  return Object.keys(stored ?? {}).map((name) => ({ name, value: '', stored: true, mode: 'keep' }));
}

/** The `secrets` of a create or update body. */
export function secretsBody(rows: readonly SecretRow[]): Record<string, string | null> {
  const out = Object.create(null) as Record<string, string | null>;
  for (const row of rows) {
    const name = row.name.trim();
    if (!name) continue;
    if (!row.stored) {
      if (row.value !== '') out[name] = row.value;
    } else out[name] = row.mode === 'keep' ? 'set' : row.mode === 'remove' ? null : row.value;
  }
  return out;
}

/** Whether a row changes anything stored (so a connection test must use the form, not the saved source). */
export function secretsChanged(rows: readonly SecretRow[]): boolean {
  return rows.some((row) => !row.stored || row.mode !== 'keep');
}

type Props = {
  rows: SecretRow[];
  onChange: (rows: SecretRow[]) => void;
  /** A fixed single secret (SQL: `password`); else a list of named ones (HTTP: secret headers). */
  fixedName?: string;
  error?: string | undefined;
};

export function SecretFields({ rows, onChange, fixedName, error }: Props) {
  const shown = fixedName && !rows.some((r) => r.name === fixedName) ? [...rows, { name: fixedName, value: '', stored: false, mode: 'keep' as const }] : rows;
  const put = (index: number, patch: Partial<SecretRow>) => onChange(shown.map((row, i) => (i === index ? { ...row, ...patch } : row)));
  return (
    <div className="secrets" data-testid="secrets">
      {shown.map((row, i) => (
        <div className="secret-row" key={i} data-testid={`secret-${row.name || i}`}>
          {fixedName ? (
            <span className="secret-row__name mono">{row.name}</span>
          ) : (
            <input
              className="input input--mono secret-row__name"
              value={row.name}
              readOnly={row.stored}
              placeholder="Header name"
              aria-label="Secret header name"
              onChange={(e) => put(i, { name: e.target.value })}
            />
          )}
          {row.stored && row.mode === 'keep' && (
            <>
              <span className="pill" data-testid="secret-set">
                set
              </span>
              <button type="button" className="btn btn--small btn--ghost" data-testid="secret-replace" onClick={() => put(i, { mode: 'replace' })}>
                Replace
              </button>
              <button type="button" className="btn btn--small btn--ghost btn--danger-text" data-testid="secret-remove" onClick={() => put(i, { mode: 'remove' })}>
                Remove
              </button>
            </>
          )}
          {row.stored && row.mode === 'remove' && (
            <>
              <span className="muted small">removed when you save</span>
              <button type="button" className="btn btn--small btn--ghost" onClick={() => put(i, { mode: 'keep' })}>
                Undo
              </button>
            </>
          )}
          {(!row.stored || row.mode === 'replace') && (
            <>
              <input
                className="input"
                type="password"
                autoComplete="new-password"
                value={row.value}
                placeholder={row.stored ? 'New value' : fixedName ? 'Not set' : 'Value'}
                aria-label={`Value of secret ${row.name || 'header'}`}
                data-testid="secret-value"
                onChange={(e) => put(i, { value: e.target.value })}
              />
              {row.stored ? (
                <button type="button" className="btn btn--small btn--ghost" onClick={() => put(i, { mode: 'keep', value: '' })}>
                  Keep the stored one
                </button>
              ) : (
                !fixedName && (
                  <button type="button" className="icon-btn" aria-label="Remove secret" onClick={() => onChange(shown.filter((_, j) => j !== i))}>
                    ×
                  </button>
                )
              )}
            </>
          )}
        </div>
      ))}
      {!fixedName && (
        <button
          type="button"
          className="btn btn--small btn--ghost"
          data-testid="secret-add"
          onClick={() => onChange([...shown, { name: '', value: '', stored: false, mode: 'keep' }])}
        >
          + Secret header
        </button>
      )}
      {error && <span className="field__error">{error}</span>}
    </div>
  );
}
