/** Run detail: the run's graph read-only with node statuses (live while it runs), timeline, event log, actions. */
import { ReactFlowProvider } from '@xyflow/react';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';

import { WaitingApprovals } from '../approvals/WaitingApprovals';
import { noticeRunUpdate } from '../approvals/approvalsStore';
import { runs, workflows } from '../api/endpoints';
import { subscribeToRun } from '../api/realtime';
import { TERMINAL_RUN_STATUSES, type RetryVersion, type RunDetail, type RunEvent, type TimelineRow } from '../api/types';
import type { DefinitionJson } from '../graph/convert';
import { NodeDetails } from '../editor/details/NodeDetails';
import { useOpenDetailsKey } from '../editor/details/useOpenDetailsKey';
import { EditorCanvas } from '../editor/EditorCanvas';
import { NodeInspector } from '../editor/inspector/NodeInspector';
import { EditorStoreProvider, useEditor, useEditorStoreApi } from '../editor/storeContext';
import { formatDuration, formatTime } from '../shared/format';
import { errorMessage, toast } from '../shared/toasts';
import { JsonView } from '../shared/ui/JsonView';
import { TruncatedOutput } from '../shared/ui/TruncatedOutput';
import { StatusBadge } from '../shared/ui/StatusBadge';
import { SlaBadge } from './SlaBadge';
import { Timeline } from './Timeline';

type Tab = 'timeline' | 'events' | 'io';

function definitionFromEvents(events: readonly RunEvent[]): DefinitionJson | null {
  for (const e of events) {
    if (e.eventType !== 'SYSTEM_SET' || typeof e.payload !== 'object' || e.payload === null) continue;
    const def = (e.payload as Record<string, unknown>).__workflowDefinition;
    if (def && typeof def === 'object' && 'nodes' in def) return def as DefinitionJson;
  }
  return null;
}

function EventLog({ events, onMore }: { events: RunEvent[]; onMore: (() => void) | null }) {
  return (
    <div className="event-log" data-testid="event-log">
      <table className="table table--compact">
        <thead>
          <tr>
            <th>#</th>
            <th>Time</th>
            <th>Event</th>
            <th>Node</th>
            <th>Attempt</th>
            <th>Detail</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <tr key={e.logId} data-testid="event-row" data-event={e.eventType}>
              <td className="muted">{e.logId}</td>
              <td>{formatTime(e.createdAt)}</td>
              <td>
                <code>{e.eventType}</code>
              </td>
              <td>
                {e.nodeId ?? <span className="muted">run</span>}
                {e.iteration && <span className="muted"> #{e.iteration}</span>}
              </td>
              <td>{e.nodeId ? e.nodeAttempt : ''}</td>
              <td className="truncate mono" title={e.errorMessage ?? undefined}>
                {e.errorMessage ? <span className="text-error">{e.errorMessage}</span> : e.nodeStatus ?? ''}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {onMore && (
        <button type="button" className="btn btn--small" onClick={onMore}>
          Load more events
        </button>
      )}
    </div>
  );
}

function RunDetailScreen({ runId }: { runId: string }) {
  const store = useEditorStoreApi();
  const navigate = useNavigate();
  const run = useEditor((s) => s.run);
  const inspectorOpen = useEditor((s) => s.inspectorNodeId !== null);
  const graphNodes = useEditor((s) => s.nodes);
  const labelOf = useMemo(() => {
    const labels = new Map(graphNodes.map((n) => [n.id, n.data.label]));
    return (nodeId: string) => labels.get(nodeId) || nodeId;
  }, [graphNodes]);
  const [detail, setDetail] = useState<RunDetail | null>(null);
  const [title, setTitle] = useState<string>('');
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [eventsCursor, setEventsCursor] = useState<string | null>(null);
  const [timeline, setTimeline] = useState<TimelineRow[]>([]);
  const [tab, setTab] = useState<Tab>('timeline');
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(() => Date.now() / 1000);
  const finished = run ? TERMINAL_RUN_STATUSES.has(run.status) : true;
  useOpenDetailsKey(store);

  const refresh = useCallback(async () => {
    const [d, t, ev] = await Promise.all([runs.get(runId), runs.timeline(runId), runs.events(runId)]);
    setDetail(d);
    store.getState().dispatchRun({ kind: 'detail', detail: d });
    setTimeline(t.items);
    setEvents(ev.items);
    setEventsCursor(ev.nextCursor ?? null);
    return { d, ev };
  }, [runId, store]);

  useEffect(() => {
    let leave: (() => void) | null = null;
    let live = true;
    (async () => {
      try {
        const { d, ev } = await refresh();
        let definition: DefinitionJson | null = d.isTest ? definitionFromEvents(ev.items) : null;
        // Titled by its workflow: a test run (a sub-workflow's child test run too) by the title its graph carries,
        // else by the saved workflow it belongs to.
        let name = typeof definition?.title === 'string' ? definition.title : '';
        if (!definition && d.workflowId && d.version) {
          const w = await workflows.version(d.workflowId, d.version);
          definition = w;
          name = w.title;
        } else if (!name && d.workflowId) {
          name = await workflows
            .get(d.workflowId)
            .then((w) => w.title)
            .catch(() => ''); // deleted since: the generic title
        }
        if (!live) return;
        setTitle(name || (d.isTest ? 'Test run' : 'Run'));
        store.getState().load(
          { workflowId: d.workflowId, version: d.version ?? 0, title: name, description: null, options: null },
          definition ?? { nodes: [], edges: [] },
          { readOnly: true },
        );
        store.getState().dispatchRun({ kind: 'detail', detail: d });
        if (!TERMINAL_RUN_STATUSES.has(d.status)) {
          leave = await subscribeToRun(runId, (msg) => {
            store.getState().dispatchRun(msg);
            noticeRunUpdate(msg);
            // The run may have finished between the first read and the join: the snapshot then shows it.
            const ended = (msg.kind === 'status' || msg.kind === 'snapshot') && TERMINAL_RUN_STATUSES.has(msg.status);
            if (ended) void refresh();
          });
          if (!live) leave(); // the page was left while joining
        }
      } catch (err) {
        if (live) setError(errorMessage(err));
      }
    })();
    return () => {
      live = false;
      leave?.();
    };
  }, [runId, refresh, store]);

  // While it runs: tick the clock and refresh the timeline now and then.
  useEffect(() => {
    if (finished) return;
    const t = window.setInterval(() => {
      setNow(Date.now() / 1000);
      runs
        .timeline(runId)
        .then((page) => setTimeline(page.items))
        .catch(() => undefined);
    }, 1500);
    return () => window.clearInterval(t);
  }, [finished, runId]);

  const cancel = async () => {
    try {
      await runs.cancel(runId);
      toast('info', 'Run cancelled.');
      await refresh();
    } catch (err) {
      toast('error', `Could not cancel: ${errorMessage(err)}`);
    }
  };

  const [retryMenu, setRetryMenu] = useState(false);
  const retry = async (version: RetryVersion) => {
    setRetryMenu(false);
    try {
      const result = await runs.retry(runId, version);
      const on = version === 'latest' ? ' on the latest version' : '';
      toast('info', `Retrying ${(result.nodeIds ?? []).length} failed node(s)${on}.`);
      navigate(0);
    } catch (err) {
      toast('error', `Could not retry: ${errorMessage(err)}`);
    }
  };

  const moreEvents = async () => {
    if (!eventsCursor) return;
    const page = await runs.events(runId, eventsCursor);
    setEvents((old) => [...old, ...page.items]);
    setEventsCursor(page.nextCursor ?? null);
  };

  if (error) {
    return (
      <div className="page page--center">
        <div className="error-box">Could not open run {runId}: {error}</div>
        <Link className="btn" to="/runs">
          Back to runs
        </Link>
      </div>
    );
  }

  const status = run?.status ?? detail?.status;
  const duration = detail?.startedAt && detail.completedAt ? detail.completedAt - detail.startedAt : null;
  return (
    <div className="run-detail" data-testid="run-detail" data-status={status}>
      <div className="toolbar">
        <Link to="/runs" className="btn btn--ghost btn--small">
          ← Runs
        </Link>
        <h1 className="toolbar__heading" data-testid="run-title">
          {title}
        </h1>
        {detail?.isTest && title !== 'Test run' && <span className="pill pill--test">test</span>}
        {status && <StatusBadge status={status} testId="run-detail-status" />}
        <SlaBadge at={run?.slaBreachedAt ?? detail?.slaBreachedAt} />
        {detail && (
          <span className="muted small run-meta">
            {detail.version ? `v${detail.version} · ` : ''}
            {detail.trigger} · {detail.availableAt ? 'starts' : 'started'} {formatTime(detail.startedAt ?? detail.createdAt)}
            {detail.retry ? ` · failed, retried ${detail.retry === 1 ? 'once' : `${detail.retry} times`} (failed attempts in the timeline)` : ''}
            {detail.priority !== undefined && detail.priority !== 50 ? ` · priority ${detail.priority}` : ''}
            {duration !== null && ` · ${formatDuration(duration)}`}
          </span>
        )}
        {detail?.waitingReason && status === 'PENDING' && (
          <span className="pill" title={detail.waitingReason} data-testid="run-waiting-reason">
            ⏸ {detail.waitingReason}
          </span>
        )}
        {detail &&
          Object.entries(detail.labels ?? {}).map(([name, value]) => (
            <Link key={name} className="pill" to={`/runs?labels=${encodeURIComponent(`${name}=${value}`)}`} title="Runs with this label" data-testid="run-label">
              {name}={value}
            </Link>
          ))}
        <span className="spacer" />
        {!finished && (
          <button type="button" className="btn btn--danger" onClick={() => void cancel()} data-testid="run-cancel">
            Cancel
          </button>
        )}
        {status === 'FAILED' && (
          <span className="retry-menu">
            <button
              type="button"
              className="btn"
              aria-haspopup="menu"
              aria-expanded={retryMenu}
              onClick={() => setRetryMenu((open) => !open)}
              data-testid="run-retry"
            >
              ↻ Retry failed ▾
            </button>
            {retryMenu && (
              <span className="retry-menu__items" role="menu">
                <button type="button" role="menuitem" className="btn btn--small" onClick={() => void retry('original')} data-testid="run-retry-original">
                  With the original version{detail?.version ? ` (v${detail.version})` : ''}
                </button>
                {!detail?.isTest && (
                  <button type="button" role="menuitem" className="btn btn--small" onClick={() => void retry('latest')} data-testid="run-retry-latest">
                    With the latest saved version
                  </button>
                )}
              </span>
            )}
          </span>
        )}
        {detail?.workflowId && (
          <>
            <Link className="btn" to={`/workflows/${detail.workflowId}?debug=${runId}`} data-testid="debug-in-editor">
              Debug in editor
            </Link>
            <Link className="btn" to={`/workflows/${detail.workflowId}`}>
              Open workflow
            </Link>
          </>
        )}
      </div>
      {detail?.parentInstanceId && (
        <div className="banner banner--info" data-testid="run-parent">
          <span>
            Called by{' '}
            <Link to={`/runs/${encodeURIComponent(detail.parentInstanceId)}`} data-testid="run-parent-link">
              run <code>{detail.parentInstanceId.slice(0, 8)}</code>
            </Link>
            {detail.parentNodeId && (
              <>
                {' '}
                (node <code>{detail.parentNodeId}</code>)
              </>
            )}
          </span>
        </div>
      )}
      {detail?.error && <div className="banner banner--error" data-testid="run-detail-error">{detail.error}</div>}
      {run && <WaitingApprovals nodes={run.nodes} labels={labelOf} />}
      <div className="run-detail__body">
        <div className="run-detail__canvas">
          <EditorCanvas />
        </div>
        {inspectorOpen && <NodeInspector runView />}
      </div>
      <NodeDetails />
      <section className="run-detail__bottom">
        <nav className="tabs tabs--bar">
          <button type="button" className={tab === 'timeline' ? 'is-active' : ''} onClick={() => setTab('timeline')} data-testid="tab-timeline">
            Timeline
          </button>
          <button type="button" className={tab === 'events' ? 'is-active' : ''} onClick={() => setTab('events')} data-testid="tab-events">
            Event log ({events.length}
            {eventsCursor ? '+' : ''})
          </button>
          <button type="button" className={tab === 'io' ? 'is-active' : ''} onClick={() => setTab('io')} data-testid="tab-io">
            Input &amp; output
          </button>
        </nav>
        <div className="run-detail__tab">
          {tab === 'timeline' && <Timeline rows={timeline} now={now} labelOf={labelOf} />}
          {tab === 'events' && <EventLog events={events} onMore={eventsCursor ? () => void moreEvents() : null} />}
          {tab === 'io' && (
            <div className="io-cols">
              <div>
                <h4 className="section-title">Input</h4>
                <JsonView value={detail?.input} testId="run-input" />
              </div>
              <div>
                <h4 className="section-title">Output</h4>
                {(run?.outputTruncated ?? detail?.outputTruncated) ? (
                  <TruncatedOutput truncated={(run?.outputTruncated ?? detail?.outputTruncated)!} testId="run-detail-output-truncated" />
                ) : (
                  <JsonView value={run?.output ?? detail?.output} testId="run-detail-output" empty="no output" />
                )}
              </div>
            </div>
          )}
        </div>
      </section>
    </div>
  );
}

export function RunDetailPage() {
  const { runId } = useParams();
  if (!runId) return null;
  return (
    <EditorStoreProvider key={runId}>
      <ReactFlowProvider>
        <RunDetailScreen runId={runId} />
      </ReactFlowProvider>
    </EditorStoreProvider>
  );
}
