/** /workflows/:workflowId/widgets: the workflow's widgets (create, rename, delete) and the editor of one. */
import './designer.css';

import { useCallback, useEffect, useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';

import { runs as runsApi, workflows } from '../../api/endpoints';
import type { RunSummary } from '../../api/types';
import { relativeTime } from '../../shared/format';
import { errorMessage, toast } from '../../shared/toasts';
import { useConfirm } from '../../shared/ui/ConfirmDialog';
import { widgetsApi } from '../api';
import type { Widget } from '../types';
import { WidgetEditor } from './WidgetEditor';

const NEW = 'new';

export function WidgetDesignerPage() {
  const { workflowId = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const selected = params.get('widget');
  const [title, setTitle] = useState<string>('');
  const [widgets, setWidgets] = useState<Widget[] | null>(null);
  const [runs, setRuns] = useState<RunSummary[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [renaming, setRenaming] = useState<{ id: string; name: string } | null>(null);
  const [confirm, confirmDialog] = useConfirm();

  const select = useCallback(
    (id: string | null) => {
      const next = new URLSearchParams(params);
      if (id) next.set('widget', id);
      else next.delete('widget');
      setParams(next, { replace: true });
    },
    [params, setParams],
  );

  const reload = useCallback(() => {
    widgetsApi
      .list(workflowId)
      .then((page) => {
        setWidgets(page.items);
        setError(null);
      })
      .catch((err: unknown) => setError(errorMessage(err)));
  }, [workflowId]);

  useEffect(() => {
    reload();
    workflows
      .get(workflowId)
      .then((wf) => setTitle(wf.title))
      .catch(() => undefined);
    runsApi
      .list({ workflowId, status: 'COMPLETED', isTest: false })
      .then((page) => setRuns(page.items))
      .catch(() => setRuns([]));
  }, [workflowId, reload]);

  const current = selected && selected !== NEW ? (widgets?.find((w) => w.id === selected) ?? null) : null;

  const rename = async (widget: Widget, name: string) => {
    setRenaming(null);
    const trimmed = name.trim();
    if (!trimmed || trimmed === widget.name) return;
    try {
      const saved = await widgetsApi.save(widget.id, {
        workflowId: widget.workflowId,
        name: trimmed,
        type: widget.type,
        mode: widget.mode,
        config: widget.config,
        frameAncestors: widget.frameAncestors ?? null,
      });
      setWidgets((ws) => ws?.map((w) => (w.id === saved.id ? saved : w)) ?? null);
    } catch (err) {
      toast('error', `Could not rename: ${errorMessage(err)}`);
    }
  };

  const remove = async (widget: Widget) => {
    const ok = await confirm({
      title: 'Delete widget?',
      message: `Delete the widget “${widget.name}”? Its embed links stop working.`,
      confirmLabel: 'Delete',
      danger: true,
    });
    if (!ok) return;
    try {
      await widgetsApi.remove(widget.id);
      toast('success', `Deleted "${widget.name}"`);
      if (selected === widget.id) select(null);
      setWidgets((ws) => ws?.filter((w) => w.id !== widget.id) ?? null);
    } catch (err) {
      toast('error', `Could not delete: ${errorMessage(err)}`);
    }
  };

  return (
    <div className="page wd-page" data-testid="widget-designer">
      {confirmDialog}
      <div className="page__head">
        <h1>Widgets</h1>
        <Link to={`/workflows/${workflowId}`} className="muted" data-testid="widgets-back">
          ← {title || 'workflow'}
        </Link>
        <span className="spacer" />
        <button type="button" className="btn btn--primary" onClick={() => select(NEW)} data-testid="widget-new">
          + New widget
        </button>
      </div>
      {error && <div className="error-box">{error}</div>}
      <div className="wd-layout">
        <aside className="wd-list" data-testid="widget-list">
          {widgets === null && !error && <p className="muted small">Loading…</p>}
          {widgets?.length === 0 && <p className="muted small">No widgets yet. A widget shows a run's output as a table, chart, figure, text or JSON, and can be embedded in other pages.</p>}
          {widgets?.map((w) => (
            <div key={w.id} className={`wd-item${w.id === selected ? ' is-active' : ''}`} data-testid="widget-item" data-widget-id={w.id}>
              {renaming?.id === w.id ? (
                <input
                  className="input"
                  autoFocus
                  value={renaming.name}
                  aria-label="New name"
                  data-testid="widget-rename-input"
                  onChange={(e) => setRenaming({ id: w.id, name: e.target.value })}
                  onBlur={() => void rename(w, renaming.name)}
                  onKeyDown={(e) => {
                    if (e.key === 'Enter') void rename(w, renaming.name);
                    if (e.key === 'Escape') setRenaming(null);
                  }}
                />
              ) : (
                <button type="button" className="wd-item__main" onClick={() => select(w.id)} data-testid="widget-open">
                  <span className="wd-item__name">{w.name}</span>
                  <span className="muted small">
                    {w.type} · {w.mode} · {relativeTime(w.updatedAt)}
                  </span>
                </button>
              )}
              <span className="wd-item__actions">
                <button type="button" className="icon-btn" title="Rename" aria-label={`Rename ${w.name}`} onClick={() => setRenaming({ id: w.id, name: w.name })} data-testid="widget-rename">
                  ✎
                </button>
                <button type="button" className="icon-btn" title="Delete" aria-label={`Delete ${w.name}`} onClick={() => void remove(w)} data-testid="widget-item-delete">
                  ×
                </button>
              </span>
            </div>
          ))}
        </aside>
        <section className="wd-main">
          {selected === NEW ? (
            <WidgetEditor
              key={NEW}
              workflowId={workflowId}
              widget={null}
              runs={runs}
              onSaved={(w) => {
                setWidgets((ws) => [...(ws ?? []), w]);
                select(w.id);
              }}
              onDelete={() => undefined}
            />
          ) : current ? (
            <WidgetEditor
              key={current.id}
              workflowId={workflowId}
              widget={current}
              runs={runs}
              onSaved={(w) => setWidgets((ws) => ws?.map((x) => (x.id === w.id ? w : x)) ?? null)}
              onDelete={(w) => void remove(w)}
            />
          ) : (
            <div className="empty">{selected && widgets ? 'This widget does not exist.' : 'Pick a widget, or create one.'}</div>
          )}
        </section>
      </div>
    </div>
  );
}

export default WidgetDesignerPage;
