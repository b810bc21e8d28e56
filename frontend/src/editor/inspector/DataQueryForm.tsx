/**
 * The Data query node's form: pick a saved query from a searchable list (or write a new one in place),
 * then one template field per parameter of the query (`config.args`).
 */
import { useCallback, useEffect, useMemo, useState, type KeyboardEvent } from 'react';
import { Link } from 'react-router';

import { savedQueries, type SavedQuery } from '../../data/api';
import { QueryForm } from '../../data/QueryForm';
import { errorMessage } from '../../shared/toasts';
import { Field, KeyValueEditor } from './fields';
import type { FormProps } from './forms';
import { TemplateInput } from './TemplateInput';

function own(args: Readonly<Record<string, string>>, name: string): string | undefined {
  return Object.hasOwn(args, name) ? args[name] : undefined;
}

/** The args for `query`: a field per parameter, keeping what was typed for names it still has. */
export function argsFor(query: SavedQuery, args: Readonly<Record<string, string>>): Record<string, string> {
  const next = Object.create(null) as Record<string, string>;
  for (const name of query.parameters) next[name] = own(args, name) ?? '';
  return { ...next };
}

function QueryPicker({ queries, onPick, onNew }: { queries: SavedQuery[]; onPick: (query: SavedQuery) => void; onNew: () => void }) {
  const [search, setSearch] = useState('');
  const [active, setActive] = useState(0);
  const needle = search.trim().toLowerCase();
  const shown = queries.filter((q) => !needle || q.name.toLowerCase().includes(needle));
  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (shown.length) setActive((i) => (i + (e.key === 'ArrowDown' ? 1 : shown.length - 1)) % shown.length);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      const choice = shown[Math.min(active, shown.length - 1)];
      if (choice) onPick(choice);
    }
  };
  return (
    <div className="query-picker" data-testid="query-picker">
      <input
        className="input"
        value={search}
        placeholder={queries.length ? `Search ${queries.length} saved ${queries.length === 1 ? 'query' : 'queries'}…` : 'No saved queries yet'}
        aria-label="Search saved queries"
        role="combobox"
        aria-expanded="true"
        data-testid="query-search"
        onChange={(e) => {
          setSearch(e.target.value);
          setActive(0);
        }}
        onKeyDown={onKeyDown}
      />
      {shown.length > 0 && (
        <ul className="query-picker__list" role="listbox" aria-label="Saved queries">
          {shown.map((q, i) => (
            <li
              key={q.id}
              role="option"
              aria-selected={i === active}
              data-testid="query-option"
              data-name={q.name}
              onMouseDown={(e) => e.preventDefault()}
              onClick={() => onPick(q)}
            >
              {q.name}
              {q.parameters.length > 0 && <span className="muted small"> ({q.parameters.join(', ')})</span>}
            </li>
          ))}
        </ul>
      )}
      {queries.length > 0 && shown.length === 0 && <div className="muted small">No saved query matches “{search}”.</div>}
      <button type="button" className="btn btn--small btn--ghost" onClick={onNew} data-testid="query-new-inline">
        + New query
      </button>
    </div>
  );
}

export function DataQueryForm({ node, setConfig, paths, readOnly, problemAt }: FormProps<'dataQuery'>) {
  const { queryId, args } = node.data.config;
  const [queries, setQueries] = useState<SavedQuery[] | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [picking, setPicking] = useState(false);
  const [creating, setCreating] = useState(false);

  const reload = useCallback(() => {
    savedQueries
      .list()
      .then((items) => {
        setQueries(items);
        setLoadError(null);
      })
      .catch((err: unknown) => setLoadError(errorMessage(err)));
  }, []);
  useEffect(reload, [reload]);

  const chosen = useMemo(() => queries?.find((q) => q.id === queryId) ?? null, [queries, queryId]);
  const choose = (query: SavedQuery) => {
    setConfig({ queryId: query.id, args: argsFor(query, args) });
    setPicking(false);
    setCreating(false);
  };
  const extra = chosen ? Object.keys(args).filter((name) => !chosen.parameters.includes(name)) : [];
  const setArg = (name: string, value: string) => setConfig({ queryId, args: { ...args, [name]: value } }, `args:${node.id}:${name}`);

  if (loadError !== null) {
    // Without the list, the id can still be typed (and the arguments edited by name).
    return (
      <>
        <Field label="Saved query id" error={problemAt('config.queryId')} hint={`Saved queries could not be listed (${loadError}).`}>
          <input
            className="input input--mono"
            value={queryId}
            readOnly={readOnly}
            data-testid="query-id"
            onChange={(e) => setConfig({ queryId: e.target.value, args }, `query:${node.id}`)}
          />
        </Field>
        <Field label="Arguments" error={problemAt('config.args')}>
          <KeyValueEditor entries={args} onChange={(next) => setConfig({ queryId, args: next }, `args:${node.id}`)} paths={paths} keyPlaceholder="name" testId="query-args" readOnly={readOnly} />
        </Field>
      </>
    );
  }

  const showPicker = !readOnly && (picking || (!chosen && queries !== null)) && !creating;
  return (
    <>
      <div className={`field${problemAt('config.queryId') ? ' has-error' : ''}`}>
        <span className="field__label">Saved query</span>
        {queries === null && <span className="muted small">Loading saved queries…</span>}
        {chosen && !picking && (
          <div className="query-picker__chosen" data-testid="query-chosen" data-query-id={chosen.id}>
            <strong>{chosen.name}</strong>
            <Link className="small" to={`/queries/${encodeURIComponent(chosen.id)}`} target="_blank" rel="noreferrer">
              open
            </Link>
            <span className="spacer" />
            {!readOnly && (
              <button type="button" className="btn btn--small btn--ghost" onClick={() => setPicking(true)} data-testid="query-change">
                Change
              </button>
            )}
          </div>
        )}
        {queries !== null && !chosen && queryId && (
          <span className="field__error" data-testid="query-missing">
            The saved query {queryId} does not exist (any more): pick another.
          </span>
        )}
        {showPicker && queries && <QueryPicker queries={queries} onPick={choose} onNew={() => setCreating(true)} />}
        {creating && (
          <div className="inline-query" data-testid="inline-query">
            <QueryForm
              query={null}
              compact
              onCancel={() => setCreating(false)}
              onSaved={(query) => {
                setQueries((old) => [...(old ?? []).filter((q) => q.id !== query.id), query]);
                choose(query);
              }}
            />
          </div>
        )}
        {problemAt('config.queryId') && <span className="field__error">{problemAt('config.queryId')}</span>}
      </div>
      {chosen && (
        <div className={`field${problemAt('config.args') ? ' has-error' : ''}`} data-testid="query-args">
          <span className="field__label">Arguments</span>
          {chosen.parameters.length === 0 && <span className="muted small">This query takes no parameters.</span>}
          {chosen.parameters.map((name) => (
            <label className="kv__row" key={name}>
              <span className="mono kv__key">{name}</span>
              <TemplateInput
                value={own(args, name) ?? ''}
                onChange={(value) => setArg(name, value)}
                paths={paths}
                placeholder="{{ ctx.input.id }}"
                readOnly={readOnly}
                ariaLabel={`value of ${name}`}
                testId={`query-arg-${name}`}
              />
            </label>
          ))}
          {extra.map((name) => (
            <div className="kv__row" key={name} data-testid="query-arg-extra">
              <span className="mono kv__key text-error">{name}</span>
              <span className="muted small">not a parameter of this query</span>
              {!readOnly && (
                <button
                  type="button"
                  className="icon-btn"
                  aria-label={`Remove ${name}`}
                  onClick={() => setConfig({ queryId, args: Object.fromEntries(Object.entries(args).filter(([k]) => k !== name)) })}
                >
                  ×
                </button>
              )}
            </div>
          ))}
          {problemAt('config.args') ? (
            <span className="field__error">{problemAt('config.args')}</span>
          ) : (
            <span className="field__hint">Templates; each value is bound as a parameter, never pasted into the query.</span>
          )}
        </div>
      )}
    </>
  );
}
