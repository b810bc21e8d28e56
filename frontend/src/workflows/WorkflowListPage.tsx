/** The workflow list: search, create, rename, duplicate, delete, export and import; examples when empty. */
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Link, useNavigate } from 'react-router';

import { workflows } from '../api/endpoints';
import type { WorkflowSummary } from '../api/types';
import { starterDefinition, type DefinitionJson } from '../graph/convert';
import { formatTime, relativeTime } from '../shared/format';
import { errorMessage, toast } from '../shared/toasts';
import { useConfirm } from '../shared/ui/ConfirmDialog';
import { Modal } from '../shared/ui/Modal';
import { ExamplePicker } from './ExamplePicker';
import { ImportDialog } from './ImportDialog';
import { downloadJson, exportable, fileNameFor } from './workflowJson';

type Dialog =
  | { kind: 'rename'; workflow: WorkflowSummary }
  | { kind: 'create' }
  | { kind: 'import' }
  | null;

export function WorkflowListPage() {
  const navigate = useNavigate();
  const [items, setItems] = useState<WorkflowSummary[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [dialog, setDialog] = useState<Dialog>(null);
  const [name, setName] = useState('');
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      const page = await workflows.list();
      setItems(page.items);
      setCursor(page.nextCursor ?? null);
      setError(null);
    } catch (err) {
      setError(errorMessage(err));
    }
  }, []);

  useEffect(() => {
    void load();
  }, [load]);

  const loadMore = async () => {
    if (!cursor) return;
    const page = await workflows.list(cursor);
    setItems((old) => [...(old ?? []), ...page.items]);
    setCursor(page.nextCursor ?? null);
  };

  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    return (items ?? []).filter((w) => !q || w.title.toLowerCase().includes(q) || (w.description ?? '').toLowerCase().includes(q));
  }, [items, search]);

  const create = async () => {
    try {
      const created = await workflows.create(starterDefinition(name.trim() || 'Untitled workflow'));
      setDialog(null);
      navigate(`/workflows/${created.id}`);
    } catch (err) {
      toast('error', `Could not create the workflow: ${errorMessage(err)}`);
    }
  };

  const rename = async (w: WorkflowSummary) => {
    try {
      const full = await workflows.get(w.id);
      const { id: _id, version, createdAt: _c, updatedAt: _u, ...definition } = full;
      await workflows.save(w.id, { ...definition, description: definition.description, title: name.trim() || w.title, version });
      setDialog(null);
      toast('success', 'Renamed (a new version was saved).');
      void load();
    } catch (err) {
      toast('error', `Could not rename: ${errorMessage(err)}`);
    }
  };

  const duplicate = async (w: WorkflowSummary) => {
    try {
      const full = await workflows.get(w.id);
      const copy = await workflows.create({
        title: `Copy of ${full.title}`,
        description: full.description,
        options: full.options,
        nodes: full.nodes,
        edges: full.edges,
      });
      toast('success', `Duplicated as “${copy.title}”.`);
      void load();
    } catch (err) {
      toast('error', `Could not duplicate: ${errorMessage(err)}`);
    }
  };

  const exportWorkflow = async (w: WorkflowSummary) => {
    try {
      const full = await workflows.get(w.id);
      downloadJson(fileNameFor(full.title), exportable(full));
    } catch (err) {
      toast('error', `Could not export: ${errorMessage(err)}`);
    }
  };

  const importWorkflow = async (definition: DefinitionJson) => {
    const created = await workflows.create({ ...definition, title: definition.title?.trim() || 'Imported workflow' });
    setDialog(null);
    toast('success', `Imported “${created.title}”.`);
    navigate(`/workflows/${created.id}`);
  };

  const [ask, confirmDialog] = useConfirm();
  const remove = async (w: WorkflowSummary) => {
    const message = `Delete “${w.title}”? Its runs stay readable in the run history.`;
    if (!(await ask({ title: 'Delete workflow?', message, confirmLabel: 'Delete', danger: true }))) return;
    try {
      await workflows.remove(w.id);
      toast('success', `Deleted “${w.title}”.`);
      void load();
    } catch (err) {
      toast('error', `Could not delete: ${errorMessage(err)}`);
    }
  };

  return (
    <div className="page" data-testid="workflow-list-page">
      <div className="page__head">
        <h1>Workflows</h1>
        <input className="input search" type="search" placeholder="Search workflows…" value={search} onChange={(e) => setSearch(e.target.value)} data-testid="workflow-search" />
        <span className="spacer" />
        <button type="button" className="btn" data-testid="import-workflow" onClick={() => setDialog({ kind: 'import' })}>
          Import JSON
        </button>
        <button
          type="button"
          className="btn btn--primary"
          data-testid="new-workflow"
          onClick={() => {
            setName('');
            setDialog({ kind: 'create' });
          }}
        >
          + New workflow
        </button>
      </div>
      {error && <div className="error-box">{error}</div>}
      {items === null && !error && <p className="muted">Loading…</p>}
      {items !== null && items.length === 0 && (
        <div className="empty" data-testid="empty-list">
          <p>No workflows yet. Start from an example, import a workflow's JSON, or begin with a blank one.</p>
          <ExamplePicker />
          <div className="empty__actions">
            <button type="button" className="btn" onClick={() => setDialog({ kind: 'import' })} data-testid="empty-import">
              Import JSON
            </button>
            <button type="button" className="btn btn--primary" onClick={() => setDialog({ kind: 'create' })}>
              Create your first workflow
            </button>
          </div>
        </div>
      )}
      {shown.length > 0 && (
        <table className="table" data-testid="workflow-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Version</th>
              <th>Updated</th>
              <th>Created</th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {shown.map((w) => (
              <tr key={w.id} data-testid="workflow-row" data-id={w.id}>
                <td>
                  <Link to={`/workflows/${w.id}`} className="strong" data-testid="workflow-open">
                    {w.title || 'Untitled workflow'}
                  </Link>
                  {w.description && <div className="muted small truncate">{w.description}</div>}
                </td>
                <td>
                  <span className="pill">v{w.version}</span>
                </td>
                <td title={formatTime(w.updatedAt)}>{relativeTime(w.updatedAt)}</td>
                <td>{formatTime(w.createdAt)}</td>
                <td className="row-actions">
                  <Link className="btn btn--small btn--ghost" to={`/runs?workflowId=${w.id}`}>
                    Runs
                  </Link>
                  <button
                    type="button"
                    className="btn btn--small btn--ghost"
                    data-testid="workflow-rename"
                    onClick={() => {
                      setName(w.title);
                      setDialog({ kind: 'rename', workflow: w });
                    }}
                  >
                    Rename
                  </button>
                  <button type="button" className="btn btn--small btn--ghost" data-testid="workflow-duplicate" onClick={() => void duplicate(w)}>
                    Duplicate
                  </button>
                  <button type="button" className="btn btn--small btn--ghost" data-testid="workflow-export" title="Download as JSON" onClick={() => void exportWorkflow(w)}>
                    Export
                  </button>
                  <button type="button" className="btn btn--small btn--ghost btn--danger-text" data-testid="workflow-delete" onClick={() => void remove(w)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {items !== null && items.length > 0 && shown.length === 0 && <p className="muted">No workflow matches “{search}”.</p>}
      {cursor && (
        <button type="button" className="btn" onClick={() => void loadMore()}>
          Load more
        </button>
      )}
      {dialog?.kind === 'create' || dialog?.kind === 'rename' ? (
        <Modal
          title={dialog.kind === 'create' ? 'New workflow' : 'Rename workflow'}
          onClose={() => setDialog(null)}
          testId="name-dialog"
          footer={
            <>
              <button type="button" className="btn btn--ghost" onClick={() => setDialog(null)}>
                Cancel
              </button>
              <button type="submit" form="name-form" className="btn btn--primary" data-testid="name-confirm">
                {dialog.kind === 'create' ? 'Create' : 'Rename'}
              </button>
            </>
          }
        >
          <form
            id="name-form"
            onSubmit={(e) => {
              e.preventDefault();
              if (dialog.kind === 'create') void create();
              else void rename(dialog.workflow);
            }}
          >
            <label className="field">
              <span className="field__label">Name</span>
              <input className="input" autoFocus value={name} onChange={(e) => setName(e.target.value)} placeholder="Order triage" data-testid="name-input" />
            </label>
          </form>
          {dialog.kind === 'create' && (
            <>
              <p className="muted small">Or start from an example:</p>
              <ExamplePicker />
            </>
          )}
        </Modal>
      ) : null}
      {dialog?.kind === 'import' && (
        <ImportDialog
          onImport={importWorkflow}
          onClose={() => setDialog(null)}
          hint="A workflow exported from Flowdeck (JSON with its title, nodes and edges): it becomes a new workflow, checked like any save."
        />
      )}
      {confirmDialog}
    </div>
  );
}
