/** /queries: saved queries (list, create, edit, delete) and /queries/:id with a form to try one. */
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';

import { relativeTime } from '../shared/format';
import { errorMessage, toast } from '../shared/toasts';
import { useConfirm } from '../shared/ui/ConfirmDialog';
import { dataSources, savedQueries, type DataSource, type SavedQuery } from './api';
import { QueryForm } from './QueryForm';
import { QueryTry } from './QueryTry';

export function QueriesPage() {
  const [params] = useSearchParams();
  const sourceFilter = params.get('dataSourceId') ?? undefined;
  const [items, setItems] = useState<SavedQuery[] | null>(null);
  const [sources, setSources] = useState<DataSource[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [ask, confirmDialog] = useConfirm();

  const reload = useCallback(() => {
    Promise.all([savedQueries.list(sourceFilter), dataSources.list()])
      .then(([list, srcs]) => {
        setItems(list);
        setSources(srcs);
        setError(null);
      })
      .catch((err: unknown) => setError(errorMessage(err)));
  }, [sourceFilter]);
  useEffect(reload, [reload]);

  const sourceName = useMemo(() => new Map(sources.map((s) => [s.id, s.name])), [sources]);
  const needle = search.trim().toLowerCase();
  const shown = (items ?? []).filter((q) => !needle || q.name.toLowerCase().includes(needle));

  const remove = async (q: SavedQuery) => {
    const message = `Delete “${q.name}”? Data query nodes that run it fail until they pick another.`;
    if (!(await ask({ title: 'Delete saved query?', message, confirmLabel: 'Delete', danger: true }))) return;
    try {
      await savedQueries.remove(q.id);
      toast('success', `Query “${q.name}” deleted`);
      reload();
    } catch (err) {
      toast('error', `Could not delete: ${errorMessage(err)}`);
    }
  };

  return (
    <div className="page" data-testid="queries-page">
      <div className="page__head">
        <h1>Saved queries</h1>
        {sourceFilter && (
          <span className="pill">
            of {sourceName.get(sourceFilter) ?? 'one data source'} <Link to="/queries">×</Link>
          </span>
        )}
        <input className="input search" placeholder="Search queries" value={search} onChange={(e) => setSearch(e.target.value)} data-testid="query-search" />
        <span className="spacer" />
        <Link className="btn btn--primary" to={`/queries/new${sourceFilter ? `?dataSourceId=${encodeURIComponent(sourceFilter)}` : ''}`} data-testid="query-new">
          New query
        </Link>
      </div>
      {error && <div className="error-box">{error}</div>}
      {items === null && !error && <p className="muted">Loading…</p>}
      {items !== null && items.length === 0 && (
        <div className="empty">
          <p>No saved queries yet. A Data query node runs one.</p>
          <Link className="btn btn--primary" to="/queries/new">
            Write a query
          </Link>
        </div>
      )}
      {shown.length > 0 && (
        <table className="table" data-testid="query-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Data source</th>
              <th>Parameters</th>
              <th>Updated</th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {shown.map((q) => (
              <tr key={q.id} data-testid="query-row" data-name={q.name}>
                <td>
                  <Link className="strong" to={`/queries/${encodeURIComponent(q.id)}`} data-testid="query-open">
                    {q.name}
                  </Link>
                </td>
                <td>{sourceName.get(q.dataSourceId) ?? <span className="muted">?</span>}</td>
                <td className="mono small">{q.parameters.length ? q.parameters.join(', ') : <span className="muted">none</span>}</td>
                <td>{relativeTime(q.updatedAt)}</td>
                <td className="row-actions">
                  <button type="button" className="btn btn--small btn--ghost btn--danger-text" data-testid="query-delete" onClick={() => void remove(q)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {items !== null && items.length > 0 && shown.length === 0 && <p className="muted">No query matches “{search}”.</p>}
      {confirmDialog}
    </div>
  );
}

export function QueryEditPage() {
  const { queryId } = useParams();
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const isNew = queryId === undefined;
  const [query, setQuery] = useState<SavedQuery | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (isNew) return;
    savedQueries
      .get(queryId)
      .then(setQuery)
      .catch((err: unknown) => setError(errorMessage(err)));
  }, [isNew, queryId]);

  return (
    <div className="page page--narrow" data-testid="query-page">
      <div className="page__head">
        <Link to="/queries" className="btn btn--ghost btn--small">
          ← Saved queries
        </Link>
        <h1>{isNew ? 'New query' : (query?.name ?? 'Saved query')}</h1>
      </div>
      {error && <div className="error-box">{error}</div>}
      {(isNew || query) && (
        <QueryForm
          key={query?.updatedAt ?? 'new'}
          query={query}
          dataSourceId={params.get('dataSourceId')}
          onCancel={() => navigate('/queries')}
          onSaved={(saved) => {
            toast('success', `Query “${saved.name}” saved`);
            if (isNew) navigate(`/queries/${encodeURIComponent(saved.id)}`, { replace: true });
            else setQuery(saved);
          }}
        />
      )}
      {query && <QueryTry key={query.updatedAt} query={query} />}
    </div>
  );
}
