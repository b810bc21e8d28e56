/** Below the canvas: the test input, the live run (per node and final output), and the problem list. */
import type { ReactNode } from 'react';
import { useReactFlow } from '@xyflow/react';

import { TERMINAL_RUN_STATUSES } from '../api/types';
import { DEFAULT_RETRY, NODE_TYPE_INFO, type EditorEdge, type EditorNode } from '../graph/model';
import { attemptLabel, displayStatus, timeSpan } from '../runs/runReducer';
import { formatDuration } from '../shared/format';
import { JsonView } from '../shared/ui/JsonView';
import { StatusBadge } from '../shared/ui/StatusBadge';
import { TruncatedOutput } from '../shared/ui/TruncatedOutput';
import { SlaBadge } from '../runs/SlaBadge';
import { CodeEditor } from './inspector/LazyCodeEditor';
import { useEditor, useEditorStoreApi } from './storeContext';
import { TestInputCheck } from './TestInputCheck';

export type BottomTab = 'input' | 'run' | 'problems';

function ProblemsTab() {
  const store = useEditorStoreApi();
  const problems = useEditor((s) => s.problems);
  const flow = useReactFlow<EditorNode, EditorEdge>();
  if (problems.length === 0) {
    return (
      <p className="muted" data-testid="problems-empty">
        No problems: the workflow is valid.
      </p>
    );
  }
  const focus = (nodeId?: string, edgeId?: string) => {
    const s = store.getState();
    const target = nodeId ?? s.edges.find((e) => e.id === edgeId)?.source;
    if (!target) return;
    s.onNodesChange(s.nodes.map((n) => ({ type: 'select' as const, id: n.id, selected: n.id === target })));
    s.openInspector(target);
    void flow.fitView({ nodes: [{ id: target }], duration: 250, maxZoom: 1.2, padding: 0.6 });
  };
  return (
    <ul className="problem-list" data-testid="problem-list">
      {problems.map((p, i) => (
        <li key={i} className={`problem problem--${p.severity ?? 'error'}`} data-testid="problem" data-node-id={p.nodeId} data-edge-id={p.edgeId}>
          <span className="problem__icon" aria-label={p.severity ?? 'error'}>{p.severity === 'warning' ? '!' : '×'}</span>
          <button type="button" className="link" onClick={() => focus(p.nodeId ?? undefined, p.edgeId ?? undefined)} disabled={!p.nodeId && !p.edgeId}>
            {p.message}
          </button>
          <code className="muted small">{p.code}</code>
        </li>
      ))}
    </ul>
  );
}

function RunTab({ onStop, onRunAgain }: { onStop: () => void; onRunAgain: () => void }) {
  const store = useEditorStoreApi();
  const run = useEditor((s) => s.run);
  const nodes = useEditor((s) => s.nodes);
  if (!run) return <p className="muted">No test run yet. Press ▶ Test run (Ctrl+Enter).</p>;
  const finished = TERMINAL_RUN_STATUSES.has(run.status);
  return (
    <div className="run-tab" data-testid="run-panel" data-run-id={run.runId} data-status={run.status}>
      <div className="run-tab__head">
        <StatusBadge status={run.status} testId="run-status" />
        <SlaBadge at={run.slaBreachedAt} />
        <code className="muted small">{run.runId}</code>
        <span className="spacer" />
        {!finished ? (
          <button type="button" className="btn btn--small btn--danger" onClick={onStop} data-testid="run-stop">
            ■ Stop
          </button>
        ) : (
          <button type="button" className="btn btn--small" onClick={onRunAgain} data-testid="run-again">
            ↻ Run again
          </button>
        )}
      </div>
      <div className="run-tab__cols">
        <table className="table table--compact run-nodes">
          <thead>
            <tr>
              <th>Node</th>
              <th>Status</th>
              <th>Attempt</th>
              <th>Time</th>
            </tr>
          </thead>
          <tbody>
            {nodes.map((n) => {
              const nr = run.nodes[n.id];
              const status = displayStatus(nr);
              const span = timeSpan(nr);
              return (
                <tr key={n.id} className="clickable" data-testid={`run-node-${n.id}`} onClick={() => store.getState().openInspector(n.id)}>
                  <td>
                    <span style={{ color: NODE_TYPE_INFO[n.type].color }}>{NODE_TYPE_INFO[n.type].icon}</span> {n.data.label || n.id}
                  </td>
                  <td>{status ? <StatusBadge status={status} /> : <span className="muted">—</span>}</td>
                  <td data-testid={`run-node-attempt-${n.id}`}>
                    {nr ? `${span.iterations > 0 ? `${span.iterations} iterations, ` : ''}${attemptLabel(nr, n.data.retry?.maxAttempts ?? DEFAULT_RETRY.maxAttempts)}` : '—'}
                  </td>
                  <td>{span.start !== null && span.end !== null ? formatDuration(span.end - span.start) : '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
        <div className="run-output">
          <h4 className="section-title">{run.error ? 'Error' : 'Run output'}</h4>
          {run.error && <div className="error-box" data-testid="run-error">{run.error}</div>}
          {run.outputTruncated ? (
            <TruncatedOutput truncated={run.outputTruncated} testId="run-output-truncated" />
          ) : (
            <JsonView value={run.output} testId="run-output" empty={finished ? 'no output' : 'waiting for the run to finish…'} />
          )}
        </div>
      </div>
    </div>
  );
}

export function BottomPanel({
  tab,
  setTab,
  open,
  setOpen,
  onStop,
  onRunAgain,
}: {
  tab: BottomTab;
  setTab: (tab: BottomTab) => void;
  open: boolean;
  setOpen: (open: boolean) => void;
  /** The error of the last refused Test run (the input is also checked as it is typed, TestInputCheck). */
  inputError: string | null;
  onStop: () => void;
  onRunAgain: () => void;
}) {
  const store = useEditorStoreApi();
  const testInput = useEditor((s) => s.testInput);
  const readOnly = useEditor((s) => s.readOnly);
  const counts = useEditor((s) => {
    let errors = 0;
    for (const p of s.problems) if (p.severity !== 'warning') errors++;
    return `${errors}|${s.problems.length - errors}`;
  });
  const [errors, warnings] = counts.split('|').map(Number);
  const runStatus = useEditor((s) => s.run?.status);
  const tabButton = (id: BottomTab, label: string, extra?: ReactNode) => (
    <button
      type="button"
      className={tab === id && open ? 'is-active' : ''}
      data-testid={`bottom-tab-${id}`}
      onClick={() => {
        if (tab === id && open) setOpen(false);
        else {
          setTab(id);
          setOpen(true);
        }
      }}
    >
      {label}
      {extra}
    </button>
  );
  return (
    <section className={`bottom-panel${open ? ' is-open' : ''}`} data-testid="bottom-panel">
      <nav className="tabs tabs--bar">
        {!readOnly && tabButton('input', 'Test input')}
        {tabButton('run', 'Run', runStatus && <span className={`dot dot--${runStatus.toLowerCase()}`} />)}
        {tabButton(
          'problems',
          'Problems',
          <span className={`count${errors ? ' count--error' : warnings ? ' count--warning' : ''}`} data-testid="problem-count">
            {(errors ?? 0) + (warnings ?? 0)}
          </span>,
        )}
        <span className="spacer" />
        <button type="button" className="icon-btn" aria-label={open ? 'Collapse' : 'Expand'} onClick={() => setOpen(!open)}>
          {open ? '▾' : '▴'}
        </button>
      </nav>
      {open && (
        <div className="bottom-panel__body">
          {tab === 'input' && (
            <div className="input-tab">
              <p className="muted small">The run input as JSON: nodes read it as <code>ctx.input</code>.</p>
              <CodeEditor language="json" value={testInput} onChange={(v) => store.getState().setTestInput(v)} testId="test-input" minHeight={120} />
              <TestInputCheck text={testInput} />
            </div>
          )}
          {tab === 'run' && <RunTab onStop={onStop} onRunAgain={onRunAgain} />}
          {tab === 'problems' && <ProblemsTab />}
        </div>
      )}
    </section>
  );
}
