/** /data-sources: the tenant's data sources (list, create, edit, delete, test) — /data-sources/new, /data-sources/:id. */
import { useCallback, useEffect, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';

import { relativeTime } from '../shared/format';
import { errorMessage, toast } from '../shared/toasts';
import { useConfirm } from '../shared/ui/ConfirmDialog';
import { dataSources, type DataSource } from './api';
import { DataSourceForm } from './DataSourceForm';

export function where(source: DataSource): string {
  return String(source.kind === 'sql' ? (source.config.url ?? '') : (source.config.baseUrl ?? ''));
}

export function DataSourcesPage() {
  const [items, setItems] = useState<DataSource[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [ask, confirmDialog] = useConfirm();

  const reload = useCallback(() => {
    dataSources
      .list()
      .then((list) => {
        setItems(list);
        setError(null);
      })
      .catch((err: unknown) => setError(errorMessage(err)));
  }, []);
  useEffect(reload, [reload]);

  const remove = async (source: DataSource) => {
    const message = `Delete “${source.name}” and its stored secrets? A data source that saved queries still use cannot be deleted.`;
    if (!(await ask({ title: 'Delete data source?', message, confirmLabel: 'Delete', danger: true }))) return;
    try {
      await dataSources.remove(source.id);
      toast('success', `Data source “${source.name}” deleted`);
      reload();
    } catch (err) {
      toast('error', `Could not delete: ${errorMessage(err)}`);
    }
  };

  return (
    <div className="page" data-testid="data-sources-page">
      <div className="page__head">
        <h1>Data sources</h1>
        <span className="spacer" />
        <Link className="btn btn--primary" to="/data-sources/new" data-testid="source-new">
          New data source
        </Link>
      </div>
      <p className="muted">Databases and HTTP APIs your saved queries run against. Secrets are stored encrypted and never shown again.</p>
      {error && <div className="error-box">{error}</div>}
      {items === null && !error && <p className="muted">Loading…</p>}
      {items !== null && items.length === 0 && (
        <div className="empty">
          <p>No data sources yet.</p>
          <Link className="btn btn--primary" to="/data-sources/new">
            Add a data source
          </Link>
        </div>
      )}
      {items !== null && items.length > 0 && (
        <table className="table" data-testid="source-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Kind</th>
              <th>Where</th>
              <th>Secrets</th>
              <th>Updated</th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {items.map((s) => (
              <tr key={s.id} data-testid="source-row" data-name={s.name}>
                <td>
                  <Link className="strong" to={`/data-sources/${encodeURIComponent(s.id)}`} data-testid="source-open">
                    {s.name}
                  </Link>
                </td>
                <td>
                  <span className="pill">{s.kind.toUpperCase()}</span>
                </td>
                <td className="mono small truncate">{where(s)}</td>
                <td className="small">{Object.keys(s.secrets).length ? Object.keys(s.secrets).map((k) => `${k}: set`).join(', ') : <span className="muted">none</span>}</td>
                <td>{relativeTime(s.updatedAt)}</td>
                <td className="row-actions">
                  <Link className="btn btn--small btn--ghost" to={`/queries?dataSourceId=${encodeURIComponent(s.id)}`}>
                    Queries
                  </Link>
                  <button type="button" className="btn btn--small btn--ghost btn--danger-text" data-testid="source-delete" onClick={() => void remove(s)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {confirmDialog}
    </div>
  );
}

export function DataSourceEditPage() {
  const { sourceId } = useParams();
  const navigate = useNavigate();
  const isNew = sourceId === undefined;
  const [source, setSource] = useState<DataSource | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (isNew) return;
    dataSources
      .get(sourceId)
      .then(setSource)
      .catch((err: unknown) => setError(errorMessage(err)));
  }, [isNew, sourceId]);

  return (
    <div className="page page--narrow" data-testid="data-source-page">
      <div className="page__head">
        <Link to="/data-sources" className="btn btn--ghost btn--small">
          ← Data sources
        </Link>
        <h1>{isNew ? 'New data source' : (source?.name ?? 'Data source')}</h1>
      </div>
      {error && <div className="error-box">{error}</div>}
      {(isNew || source) && (
        <DataSourceForm
          key={source?.updatedAt ?? 'new'}
          source={source}
          onCancel={() => navigate('/data-sources')}
          onSaved={(saved) => {
            toast('success', `Data source “${saved.name}” saved`);
            if (isNew) navigate(`/data-sources/${encodeURIComponent(saved.id)}`, { replace: true });
            else setSource(saved);
          }}
        />
      )}
    </div>
  );
}
