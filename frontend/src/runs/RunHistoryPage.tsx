/** Run history: newest first, filtered by workflow, status, test/production, dates, run id and labels; cursor pagination. */
import { useEffect, useMemo, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';

import { runs, workflows, type RunFilters } from '../api/endpoints';
import { RUN_STATUSES, type RunStatus, type RunCountOut, type RunSummary } from '../api/types';
import { formatDateTime, formatDuration } from '../shared/format';
import { errorMessage } from '../shared/toasts';
import { StatusBadge } from '../shared/ui/StatusBadge';
import { dayRange, parseLabels, RunSearchFilters } from './RunSearchFilters';
import { SlaBadge } from './SlaBadge';

/** The triggers a run can have (docs/api.md "trigger"). */
const RUN_TRIGGERS = ['editor', 'api', 'webhook', 'schedule', 'workflow', 'widget', 'test'] as const;

function isRunStatus(value: string | null): value is RunStatus {
  return value !== null && (RUN_STATUSES as readonly string[]).includes(value);
}

export function RunHistoryPage() {
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const workflowId = params.get('workflowId') ?? '';
  const statusParam = params.get('status');
  const status: RunStatus | '' = isRunStatus(statusParam) ? statusParam : '';
  const kind = params.get('kind') ?? 'all';
  const trigger = params.get('trigger') ?? '';
  const fromDay = params.get('from') ?? '';
  const toDay = params.get('to') ?? '';
  const idPrefix = (params.get('q') ?? '').trim();
  const labelText = params.get('labels') ?? '';
  const labelSearch = parseLabels(labelText);
  const labelKey = JSON.stringify(labelSearch.labels);
  const [items, setItems] = useState<RunSummary[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [titles, setTitles] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [count, setCount] = useState<RunCountOut | null>(null);

  useEffect(() => {
    workflows
      .list()
      .then((page) => setTitles(Object.fromEntries(page.items.map((w) => [w.id, w.title]))))
      .catch(() => undefined);
  }, []);

  const range = dayRange(fromDay, toDay);
  const idValid = /^[A-Za-z0-9_-]*$/.test(idPrefix);
  const filters = useMemo(
    (): RunFilters => ({
      workflowId: workflowId || undefined,
      status,
      isTest: kind === 'test' ? true : kind === 'production' ? false : null,
      from: range.from,
      to: range.to,
      idPrefix: idPrefix || undefined,
      labels: JSON.parse(labelKey) as Record<string, string>,
      trigger: trigger || undefined,
    }),
    [workflowId, status, kind, range.from, range.to, idPrefix, labelKey, trigger],
  );

  useEffect(() => {
    let live = true;
    if (range.error || !idValid || labelSearch.error) {
      setItems([]);
      setCursor(null);
      return;
    }
    setItems(null);
    setCount(null);
    // Typing a run id or labels asks once the typing pauses; other filters ask at once.
    const timer = window.setTimeout(
      () => {
        runs
          .count(filters)
          .then((found) => live && setCount(found))
          .catch(() => undefined); // the list below says what went wrong
        runs
          .list(filters)
          .then((page) => {
            if (!live) return;
            setItems(page.items);
            setCursor(page.nextCursor ?? null);
            setError(null);
          })
          .catch((err: unknown) => live && setError(errorMessage(err)));
      },
      idPrefix || labelText ? 200 : 0,
    );
    return () => {
      live = false;
      window.clearTimeout(timer);
    };
  }, [filters, range.error, idValid, idPrefix, labelText, labelSearch.error]);

  const setFilter = (key: string, value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next, { replace: true });
  };

  const loadMore = async () => {
    if (!cursor) return;
    const page = await runs.list({ ...filters, cursor });
    setItems((old) => [...(old ?? []), ...page.items]);
    setCursor(page.nextCursor ?? null);
  };

  return (
    <div className="page" data-testid="run-history-page">
      <div className="page__head">
        <h1>Runs</h1>
        {count && (
          <span className="muted small" data-testid="run-count">
            {countText(count)}
          </span>
        )}
        <select className="input input--auto" value={workflowId} onChange={(e) => setFilter('workflowId', e.target.value)} data-testid="filter-workflow" aria-label="Workflow">
          <option value="">All workflows</option>
          {Object.entries(titles).map(([id, title]) => (
            <option key={id} value={id}>
              {title}
            </option>
          ))}
          {workflowId && !(workflowId in titles) && <option value={workflowId}>{workflowId}</option>}
        </select>
        <select className="input input--auto" value={status} onChange={(e) => setFilter('status', e.target.value)} data-testid="filter-status" aria-label="Status">
          <option value="">Any status</option>
          {RUN_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s.charAt(0) + s.slice(1).toLowerCase()}
            </option>
          ))}
        </select>
        <select className="input input--auto" value={trigger} onChange={(e) => setFilter('trigger', e.target.value)} data-testid="filter-trigger" aria-label="Trigger">
          <option value="">Any trigger</option>
          {RUN_TRIGGERS.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
          {trigger && !(RUN_TRIGGERS as readonly string[]).includes(trigger) && <option value={trigger}>{trigger}</option>}
        </select>
        <div className="segmented" role="radiogroup" aria-label="Kind">
          {(['all', 'production', 'test'] as const).map((k) => (
            <button key={k} type="button" role="radio" aria-checked={kind === k} className={kind === k ? 'is-active' : ''} onClick={() => setFilter('kind', k === 'all' ? '' : k)} data-testid={`filter-kind-${k}`}>
              {k === 'all' ? 'All' : k === 'test' ? 'Test' : 'Production'}
            </button>
          ))}
        </div>
      </div>
      <RunSearchFilters
        fromDay={fromDay}
        toDay={toDay}
        idPrefix={params.get('q') ?? ''}
        labelText={labelText}
        rangeError={range.error}
        idError={idValid ? labelSearch.error : 'A run id has only letters, digits, - and _.'}
        setFilter={setFilter}
        onClear={() => {
          const next = new URLSearchParams(params);
          for (const key of ['from', 'to', 'q', 'labels']) next.delete(key);
          setParams(next, { replace: true });
        }}
      />
      {error && <div className="error-box">{error}</div>}
      {items === null && !error && <p className="muted">Loading…</p>}
      {items !== null && items.length === 0 && <p className="empty muted">No runs match these filters.</p>}
      {items !== null && items.length > 0 && (
        <table className="table" data-testid="run-table">
          <thead>
            <tr>
              <th>Status</th>
              <th>Workflow</th>
              <th>Version</th>
              <th>Trigger</th>
              <th>Labels</th>
              <th>Started</th>
              <th>Duration</th>
              <th>Run</th>
            </tr>
          </thead>
          <tbody>
            {items.map((r) => (
              <tr key={r.instanceId} className="clickable" data-testid="run-row" data-id={r.instanceId} data-status={r.status} onClick={() => navigate(`/runs/${r.instanceId}`)}>
                <td>
                  <StatusBadge status={r.status} />
                  {(r.retry ?? 0) > 0 && (
                    <span
                      className="pill pill--retried"
                      data-testid="run-retried"
                      title={`It failed, then was retried ${r.retry} time(s): its failed attempts are on its page (timeline)`}
                    >
                      failed · retried{(r.retry ?? 0) > 1 ? ` ×${r.retry}` : ''}
                    </span>
                  )}
                  <SlaBadge at={r.slaBreachedAt} />
                </td>
                <td>
                  {r.workflowId ? titles[r.workflowId] ?? <code>{r.workflowId.slice(0, 8)}</code> : <span className="muted">unsaved graph</span>}
                  {r.isTest && <span className="pill pill--test">test</span>}
                </td>
                <td>{r.version ? `v${r.version}` : '—'}</td>
                <td data-testid="run-trigger">
                  {r.trigger}
                  {r.parentInstanceId && (
                    <>
                      {' · by '}
                      <Link
                        to={`/runs/${r.parentInstanceId}`}
                        title={`Called by run ${r.parentInstanceId}${r.parentNodeId ? ` (node ${r.parentNodeId})` : ''}`}
                        data-testid="run-parent-link"
                        onClick={(e) => e.stopPropagation()}
                      >
                        <code>{r.parentInstanceId.slice(0, 8)}</code>
                      </Link>
                    </>
                  )}
                </td>
                <td data-testid="run-labels">
                  {Object.entries(r.labels ?? {}).map(([name, value]) => (
                    <span key={name} className="pill" title={`${name}=${value}`}>
                      {name}={value}
                    </span>
                  ))}
                </td>
                <td title={new Date((r.availableAt ?? r.startedAt ?? r.createdAt) * 1000).toLocaleString()} data-testid="run-started">
                  {r.availableAt ? `starts ${formatDateTime(r.availableAt)}` : formatDateTime(r.startedAt ?? r.createdAt)}
                </td>
                <td>
                  {r.startedAt && r.completedAt
                    ? formatDuration(r.completedAt - r.startedAt)
                    : r.completedAt
                      ? '—'
                      : r.status === 'PENDING'
                        ? 'scheduled'
                        : 'running…'}
                </td>
                <td>
                  <Link to={`/runs/${r.instanceId}`} onClick={(e) => e.stopPropagation()}>
                    <code>{r.instanceId.slice(0, 8)}</code>
                  </Link>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cursor && (
        <button type="button" className="btn" onClick={() => void loadMore()}>
          Load more
        </button>
      )}
    </div>
  );
}

/** "1 run", "1,234 runs", "10,000+ runs": exact up to the server's cap, which it reports as `more`. */
export function countText({ count, more }: RunCountOut): string {
  const shown = `${count.toLocaleString('en-US')}${more ? '+' : ''}`;
  return `${shown} ${count === 1 && !more ? 'run' : 'runs'}`;
}
