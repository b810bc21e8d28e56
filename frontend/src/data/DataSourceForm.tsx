/** Create or edit a data source: name, kind, where it points, write-only secrets, a connection test. */
import { useEffect, useState, type FormEvent } from 'react';

import { Field } from '../editor/inspector/fields';
import { errorAt, fieldErrors, NO_ERRORS, unshownErrors, type FieldErrors } from '../shared/fieldErrors';
import { dataSources, type DataSource, type DataSourceBody, type SourceKind } from './api';
import { ConnectionTestButton } from './ConnectionTestButton';
import { SecretFields, secretRows, secretsBody, secretsChanged, type SecretRow } from './SecretFields';

type HeaderRow = { name: string; value: string };

const SHOWN = ['name', 'kind', 'config.url', 'config.baseUrl', 'config.headers', 'config.timeoutSeconds', 'config', 'secrets'];

function headerRows(headers: unknown): HeaderRow[] {
  if (typeof headers !== 'object' || headers === null) return [];
  return Object.entries(headers as Record<string, unknown>).map(([name, value]) => ({ name, value: String(value) }));
}

/** The SQLite directories this server allows (null until known, or when the server could not say). */
function useSqliteDirectories(): string[] | null {
  const [dirs, setDirs] = useState<string[] | null>(null);
  useEffect(() => {
    let live = true;
    dataSources
      .rules()
      .then((rules) => {
        if (live && Array.isArray(rules.sqliteDirectories)) setDirs(rules.sqliteDirectories.filter((d) => typeof d === 'string'));
      })
      .catch(() => undefined); // the save still says why a file is refused
    return () => {
      live = false;
    };
  }, []);
  return dirs;
}

function SqliteHint({ dirs }: { dirs: string[] | null }) {
  if (dirs === null) return null;
  if (dirs.length === 0)
    return (
      <span data-testid="sqlite-dirs" data-count="0">
        {' '}
        SQLite files are not allowed on this server (<code>FLOWDECK_SQLITE_DIRS</code> is not set).
      </span>
    );
  return (
    <span data-testid="sqlite-dirs" data-count={dirs.length}>
      {' '}
      SQLite files only inside {dirs.map((d, i) => (
        <span key={d}>
          {i > 0 && ', '}
          <code>{d}</code>
        </span>
      ))}
      .
    </span>
  );
}

export function DataSourceForm({ source, onSaved, onCancel }: { source: DataSource | null; onSaved: (source: DataSource) => void; onCancel: () => void }) {
  const [name, setName] = useState(source?.name ?? '');
  const [kind, setKind] = useState<SourceKind>(source?.kind ?? 'sql');
  const [url, setUrl] = useState(String(source?.config.url ?? ''));
  const [baseUrl, setBaseUrl] = useState(String(source?.config.baseUrl ?? ''));
  const [timeout, setTimeoutText] = useState(source?.config.timeoutSeconds === undefined ? '' : String(source.config.timeoutSeconds));
  const [headers, setHeaders] = useState<HeaderRow[]>(headerRows(source?.config.headers));
  const [secrets, setSecrets] = useState<SecretRow[]>(secretRows(source?.secrets));
  const [errors, setErrors] = useState<FieldErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);
  const sqliteDirs = useSqliteDirectories();

  const config = (): Record<string, unknown> => {
    if (kind === 'sql') return { url: url.trim() };
    const out: Record<string, unknown> = { baseUrl: baseUrl.trim() };
    const named = headers.filter((h) => h.name.trim());
    if (named.length > 0) out.headers = Object.fromEntries(named.map((h) => [h.name.trim(), h.value]));
    if (timeout.trim()) out.timeoutSeconds = Number(timeout);
    return out;
  };
  const body = (): DataSourceBody => ({ name: name.trim(), ...(source ? {} : { kind }), config: config(), secrets: secretsBody(secrets) });
  const pointsElsewhere = () => source === null || JSON.stringify(config()) !== JSON.stringify(source.config) || secretsChanged(secrets);

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    try {
      const saved = source ? await dataSources.update(source.id, body()) : await dataSources.create(body());
      setErrors(NO_ERRORS);
      onSaved(saved);
    } catch (err) {
      setErrors(fieldErrors(err));
    } finally {
      setBusy(false);
    }
  };

  const testConnection = () => {
    setErrors(NO_ERRORS);
    // Unchanged: test what is stored (with its secrets). Changed: test the form; kept secrets stay on the server.
    if (source && !pointsElsewhere()) return dataSources.test(source.id);
    const { secrets: sent, ...rest } = body();
    return dataSources.testUnsaved({ ...rest, kind, secrets: Object.fromEntries(Object.entries(sent).filter(([, v]) => typeof v === 'string' && v !== 'set')) });
  };

  const general = unshownErrors(errors, SHOWN);
  return (
    <form className="data-form" onSubmit={(e) => void save(e)} data-testid="data-source-form" noValidate>
      <Field label="Name" error={errorAt(errors, 'name')}>
        <input className="input" value={name} autoFocus onChange={(e) => setName(e.target.value)} placeholder="Orders database" data-testid="source-name" />
      </Field>
      <Field label="Kind" error={errorAt(errors, 'kind')} hint={source ? 'The kind of a saved data source cannot change.' : undefined}>
        <select className="input" value={kind} disabled={source !== null} onChange={(e) => setKind(e.target.value as SourceKind)} data-testid="source-kind">
          <option value="sql">SQL database (PostgreSQL, SQLite)</option>
          <option value="http">HTTP API</option>
        </select>
      </Field>
      {kind === 'sql' ? (
        <>
          <Field
            label="Database URL"
            error={errorAt(errors, 'config.url', 'config')}
            hint={
              <>
                An SQLAlchemy URL without the password, e.g. <code>postgresql+asyncpg://user@host/db</code> or{' '}
                <code>sqlite+aiosqlite:///{sqliteDirs?.[0] ?? '/data'}/orders.db</code>.
                <SqliteHint dirs={sqliteDirs} />
              </>
            }
          >
            <input className="input input--mono" value={url} onChange={(e) => setUrl(e.target.value)} data-testid="source-url" />
          </Field>
          <div className="field">
            <span className="field__label">Password (write-only)</span>
            <SecretFields rows={secrets} onChange={setSecrets} fixedName="password" error={errorAt(errors, 'secrets')} />
          </div>
        </>
      ) : (
        <>
          <Field label="Base URL" error={errorAt(errors, 'config.baseUrl', 'config')} hint="Saved queries add a path and parameters to it.">
            <input className="input input--mono" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} placeholder="https://api.example.com/v1" data-testid="source-base-url" />
          </Field>
          <div className={`field${errorAt(errors, 'config.headers') ? ' has-error' : ''}`}>
            <span className="field__label">Headers (shown to everyone in the tenant)</span>
            {headers.map((h, i) => (
              <div className="secret-row" key={i}>
                <input
                  className="input input--mono secret-row__name"
                  value={h.name}
                  placeholder="Accept"
                  aria-label="Header name"
                  onChange={(e) => setHeaders(headers.map((x, j) => (j === i ? { ...x, name: e.target.value } : x)))}
                />
                <input
                  className="input"
                  value={h.value}
                  placeholder="application/json"
                  aria-label={`Value of header ${h.name}`}
                  onChange={(e) => setHeaders(headers.map((x, j) => (j === i ? { ...x, value: e.target.value } : x)))}
                />
                <button type="button" className="icon-btn" aria-label="Remove header" onClick={() => setHeaders(headers.filter((_, j) => j !== i))}>
                  ×
                </button>
              </div>
            ))}
            <button type="button" className="btn btn--small btn--ghost" onClick={() => setHeaders([...headers, { name: '', value: '' }])}>
              + Header
            </button>
            {errorAt(errors, 'config.headers') && <span className="field__error">{errorAt(errors, 'config.headers')}</span>}
          </div>
          <div className="field">
            <span className="field__label">Secret headers (write-only, e.g. Authorization)</span>
            <SecretFields rows={secrets} onChange={setSecrets} error={errorAt(errors, 'secrets')} />
          </div>
          <Field label="Timeout (s)" error={errorAt(errors, 'config.timeoutSeconds')}>
            <input className="input" type="number" min={0} max={300} value={timeout} placeholder="30" onChange={(e) => setTimeoutText(e.target.value)} data-testid="source-timeout" />
          </Field>
        </>
      )}
      {general.length > 0 && (
        <div className="error-box" data-testid="form-error">
          {general.map((message, i) => (
            <div key={i}>{message}</div>
          ))}
        </div>
      )}
      <div className="btn-row">
        <ConnectionTestButton run={testConnection} onErrors={setErrors} />
        <span className="spacer" />
        <button type="button" className="btn btn--ghost" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="btn btn--primary" disabled={busy} data-testid="source-save">
          {source ? 'Save' : 'Create'}
        </button>
      </div>
    </form>
  );
}
