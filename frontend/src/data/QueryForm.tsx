/**
 * Create or edit a saved query: name, data source, the SQL (or HTTP request) and its named parameters.
 * Used by the queries page and, compact, by the Data query node's "New query" in the inspector.
 */
import { useEffect, useState, type FormEvent } from 'react';

import { Field } from '../editor/inspector/fields';
import { errorAt, fieldErrors, NO_ERRORS, unshownErrors, type FieldErrors } from '../shared/fieldErrors';
import { dataSources, httpParameters, savedQueries, sqlParameters, type DataSource, type SavedQuery, type SavedQueryBody } from './api';

const SHOWN = ['name', 'dataSourceId', 'sql', 'parameters', 'method', 'path', 'query', 'headers', 'body', 'request'];
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

function jsonText(value: unknown): string {
  return value === undefined || value === null || (typeof value === 'object' && Object.keys(value).length === 0) ? '' : JSON.stringify(value, null, 2);
}

function parseNames(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

type Props = {
  query: SavedQuery | null;
  onSaved: (query: SavedQuery) => void;
  onCancel: () => void;
  /** Preselected data source of a new query. */
  dataSourceId?: string | null;
  compact?: boolean;
};

export function QueryForm({ query, onSaved, onCancel, dataSourceId, compact = false }: Props) {
  const [sources, setSources] = useState<DataSource[] | null>(null);
  const [name, setName] = useState(query?.name ?? '');
  const [sourceId, setSourceId] = useState(query?.dataSourceId ?? dataSourceId ?? '');
  const [sql, setSql] = useState(query?.sql ?? '');
  const [method, setMethod] = useState(query?.method ?? 'GET');
  const [path, setPath] = useState(query?.path ?? '');
  const [queryText, setQueryText] = useState(jsonText(query?.query));
  const [headersText, setHeadersText] = useState(jsonText(query?.headers));
  const [bodyText, setBodyText] = useState(jsonText(query?.body));
  const [params, setParams] = useState((query?.parameters ?? []).join(', '));
  const [paramsTouched, setParamsTouched] = useState(query !== null);
  const [errors, setErrors] = useState<FieldErrors>(NO_ERRORS);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    dataSources
      .list()
      .then((list) => {
        setSources(list);
        setSourceId((current) => current || (list[0]?.id ?? ''));
      })
      .catch((err: unknown) => setErrors(fieldErrors(err)));
  }, []);

  const kind = sources?.find((s) => s.id === sourceId)?.kind ?? query?.kind ?? 'sql';
  const detected = kind === 'sql' ? sqlParameters(sql) : httpParameters(path, queryText, headersText, bodyText);
  // Until the user edits the parameter list, it follows what the SQL or request uses.
  const shownParams = paramsTouched ? params : detected.join(', ');

  const parsed = (text: string, field: string, local: Record<string, string>): unknown => {
    if (!text.trim()) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      local[field] = 'not valid JSON';
      return undefined;
    }
  };

  const save = async (e: FormEvent) => {
    e.preventDefault();
    e.stopPropagation();
    const local = Object.create(null) as Record<string, string>;
    const body: SavedQueryBody = { name: name.trim(), dataSourceId: sourceId, parameters: parseNames(shownParams) };
    if (kind === 'sql') body.sql = sql;
    else {
      body.method = method;
      body.path = path;
      body.query = (parsed(queryText, 'query', local) as Record<string, unknown> | undefined) ?? {};
      body.headers = (parsed(headersText, 'headers', local) as Record<string, string> | undefined) ?? {};
      body.body = parsed(bodyText, 'body', local) ?? null;
    }
    if (Object.keys(local).length > 0) {
      setErrors({ fields: local, general: null });
      return;
    }
    setBusy(true);
    try {
      const saved = query ? await savedQueries.update(query.id, body) : await savedQueries.create(body);
      setErrors(NO_ERRORS);
      onSaved(saved);
    } catch (err) {
      setErrors(fieldErrors(err));
    } finally {
      setBusy(false);
    }
  };

  const general = unshownErrors(errors, SHOWN);
  return (
    <form className={`data-form${compact ? ' data-form--compact' : ''}`} onSubmit={(e) => void save(e)} data-testid="query-form" noValidate>
      <Field label="Name" error={errorAt(errors, 'name')}>
        <input className="input" value={name} autoFocus onChange={(e) => setName(e.target.value)} placeholder="Orders of a customer" data-testid="query-name" />
      </Field>
      <Field label="Data source" error={errorAt(errors, 'dataSourceId')} hint={sources?.length === 0 ? 'Add a data source first (Data sources, in the top bar).' : undefined}>
        <select className="input" value={sourceId} onChange={(e) => setSourceId(e.target.value)} data-testid="query-source">
          {sources === null && <option value="">Loading…</option>}
          {sources?.length === 0 && <option value="">No data sources</option>}
          {sources?.map((s) => (
            <option key={s.id} value={s.id}>
              {s.name} ({s.kind.toUpperCase()})
            </option>
          ))}
        </select>
      </Field>
      {kind === 'sql' ? (
        <Field label="SQL" error={errorAt(errors, 'sql')} hint={<>Name parameters <code>:name</code>; they are always bound, never pasted into the SQL.</>}>
          <textarea
            className="input input--mono"
            rows={compact ? 4 : 8}
            value={sql}
            spellCheck={false}
            onChange={(e) => setSql(e.target.value)}
            placeholder="SELECT id, total FROM orders WHERE customer = :customer"
            data-testid="query-sql"
          />
        </Field>
      ) : (
        <>
          <div className="field-row">
            <Field label="Method" error={errorAt(errors, 'method')}>
              <select className="input" value={method} onChange={(e) => setMethod(e.target.value)} data-testid="query-method">
                {METHODS.map((m) => (
                  <option key={m}>{m}</option>
                ))}
              </select>
            </Field>
            <Field label="Path" error={errorAt(errors, 'path')} hint={<>After the base URL; <code>{'{{ name }}'}</code> for a parameter.</>}>
              <input className="input input--mono" value={path} onChange={(e) => setPath(e.target.value)} placeholder="orders/{{ id }}" data-testid="query-path" />
            </Field>
          </div>
          <Field label="Query parameters (JSON object)" error={errorAt(errors, 'query')}>
            <textarea className="input input--mono" rows={2} value={queryText} onChange={(e) => setQueryText(e.target.value)} placeholder={'{"status": "{{ status }}"}'} />
          </Field>
          <Field label="Headers (JSON object)" error={errorAt(errors, 'headers')}>
            <textarea className="input input--mono" rows={2} value={headersText} onChange={(e) => setHeadersText(e.target.value)} />
          </Field>
          <Field label="Body (JSON)" error={errorAt(errors, 'body')}>
            <textarea className="input input--mono" rows={3} value={bodyText} onChange={(e) => setBodyText(e.target.value)} />
          </Field>
        </>
      )}
      <Field
        label="Parameters"
        error={errorAt(errors, 'parameters', 'request')}
        hint={paramsTouched ? 'Names, separated by commas.' : `Found in the ${kind === 'sql' ? 'SQL' : 'request'}; edit to change.`}
      >
        <input
          className="input input--mono"
          value={shownParams}
          onChange={(e) => {
            setParamsTouched(true);
            setParams(e.target.value);
          }}
          placeholder="customer, since"
          data-testid="query-parameters"
        />
      </Field>
      {general.length > 0 && (
        <div className="error-box" data-testid="form-error">
          {general.map((message, i) => (
            <div key={i}>{message}</div>
          ))}
        </div>
      )}
      <div className="btn-row">
        <span className="spacer" />
        <button type="button" className="btn btn--ghost" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="btn btn--primary" disabled={busy} data-testid="query-save">
          {query ? 'Save' : 'Create query'}
        </button>
      </div>
    </form>
  );
}
