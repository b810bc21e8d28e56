/** A node's data from the last run (input context, output, logs, error, attempts) and its pinned output. */
import { useState } from 'react';

import { DEFAULT_RETRY, type EditorEdge, type EditorNode } from '../../graph/model';
import { inputContext } from '../../graph/context';
import { attemptLabel, completedOutputs, displayStatus, leadIteration, timeSpan, type NodeRun, type RunView } from '../../runs/runReducer';
import { own } from '../../shared/dict';
import { formatBytes, formatDuration, formatJson } from '../../shared/format';
import { PinIcon } from '../../shared/ui/icons';
import { JsonView } from '../../shared/ui/JsonView';
import { StatusBadge } from '../../shared/ui/StatusBadge';
import { TruncatedOutput } from '../../shared/ui/TruncatedOutput';
import { ChildRunLink } from '../nodes/FlowNode';
import { useEditor, useEditorStoreApi } from '../storeContext';
import { CodeEditor } from './LazyCodeEditor';

export function PinEditor({ node }: { node: EditorNode }) {
  const store = useEditorStoreApi();
  const pinned = useEditor((s) => (node.id in s.pins ? s.pins[node.id] : undefined));
  const isPinned = useEditor((s) => node.id in s.pins);
  const lastOutput = useEditor((s) => {
    const ran = s.run?.nodes[node.id];
    return ran?.status === 'COMPLETED' && !ran.iterations ? ran.output : undefined; // a loop body's outputs are per iteration
  });
  const [draft, setDraft] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const save = () => {
    try {
      store.getState().setPin(node.id, JSON.parse(draft ?? 'null') as unknown);
      setDraft(null);
      setError(null);
    } catch (err) {
      setError(err instanceof Error ? err.message : 'Not valid JSON');
    }
  };

  return (
    <section className="pin-box" data-testid="pin-box">
      <div className="pin-box__head">
        <h4 className="section-title">Pinned output {isPinned && (
            <span className="pill pill--pin">
              <PinIcon size={11} /> pinned
            </span>
          )}</h4>
        <div className="btn-row">
          {lastOutput !== undefined && (
            <button type="button" className="btn btn--small" data-testid="pin-last-output" onClick={() => store.getState().setPin(node.id, lastOutput)}>
              Pin last output
            </button>
          )}
          <button type="button" className="btn btn--small" data-testid="pin-edit" onClick={() => setDraft(formatJson(isPinned ? pinned : (lastOutput ?? {})))}>
            {isPinned ? 'Edit' : 'Type JSON'}
          </button>
          {isPinned && (
            <button type="button" className="btn btn--small btn--ghost" data-testid="pin-remove" onClick={() => store.getState().removePin(node.id)}>
              Unpin
            </button>
          )}
        </div>
      </div>
      <p className="muted small">Test runs use a pinned output instead of running the node. Production runs never do.</p>
      {draft !== null ? (
        <>
          <CodeEditor language="json" value={draft} onChange={setDraft} testId="pin-json" minHeight={100} />
          {error && <div className="field__error">{error}</div>}
          <div className="btn-row">
            <button type="button" className="btn btn--primary btn--small" data-testid="pin-save" onClick={save}>
              Pin
            </button>
            <button type="button" className="btn btn--small btn--ghost" onClick={() => setDraft(null)}>
              Cancel
            </button>
          </div>
        </>
      ) : (
        isPinned && <JsonView value={pinned} testId="pinned-json" />
      )}
    </section>
  );
}

/**
 * What a loop-body node received in iteration `key` (`"0.1"`): the outputs its upstream nodes gave in that
 * iteration and in the iterations enclosing it (`"0"`), over the run's top-level ones, and that iteration's
 * `ctx.loop` as the API reports it.
 */
function iterationContext(
  nodeId: string,
  key: string,
  loop: NodeRun['loop'],
  run: RunView,
  graph: { nodes: readonly EditorNode[]; edges: readonly EditorEdge[] },
): Record<string, unknown> {
  const outputs = completedOutputs(run);
  const parts = key.split('.');
  const scopes = parts.map((_, i) => parts.slice(0, i + 1).join('.')); // outermost first: the innermost wins
  for (const [id, other] of Object.entries(run.nodes)) {
    for (const scope of scopes) {
      const it = own(other.iterations, scope);
      if (it?.status === 'COMPLETED') outputs[id] = it.output;
    }
  }
  const ctx = inputContext(graph.nodes, graph.edges, nodeId, { input: run.input, outputs });
  if (loop) ctx.loop = loop;
  return ctx;
}

export function RunDataTab({
  node,
  context,
  onTestFromHere,
}: {
  node: EditorNode;
  context: Record<string, unknown> | null;
  /** Absent on a read-only run view: no pins, no test runs there. */
  onTestFromHere: ((nodeId: string) => void) | undefined;
}) {
  const nodeRun = useEditor((s) => s.run?.nodes[node.id]);
  const hasRun = useEditor((s) => s.run !== null);
  const status = displayStatus(nodeRun);
  const maxAttempts = node.data.retry?.maxAttempts ?? DEFAULT_RETRY.maxAttempts;
  const span = timeSpan(nodeRun);
  const duration = span.start !== null && span.end !== null ? span.end - span.start : null;
  const iterations = Object.entries(nodeRun?.iterations ?? {});
  const [picked, setPicked] = useState<string | null>(null);
  const lead = nodeRun ? leadIteration(nodeRun) : null;
  const openKey = iterations.some(([key]) => key === picked) ? picked : (iterations.find(([, it]) => it === lead)?.[0] ?? null);
  const opened: NodeRun | null = iterations.find(([key]) => key === openKey)?.[1] ?? null;
  const run = useEditor((s) => s.run);
  const graphNodes = useEditor((s) => s.nodes);
  const edges = useEditor((s) => s.edges);
  const shownContext = opened && openKey !== null && run ? iterationContext(node.id, openKey, opened.loop, run, { nodes: graphNodes, edges }) : context;
  const shown = opened ?? nodeRun;
  return (
    <div className="run-data" data-testid="run-data">
      {onTestFromHere && node.type !== 'start' && (
        <button
          type="button"
          className="btn btn--small"
          data-testid="test-from-here"
          disabled={!hasRun}
          title={hasRun ? 'Pin everything upstream from the last run, then test run' : 'Test run once first'}
          onClick={() => onTestFromHere(node.id)}
        >
          ▶ Test from here
        </button>
      )}
      {!nodeRun ? (
        <p className="muted">{hasRun ? 'This node has not run in the last test run.' : 'Test run the workflow to see this node’s data.'}</p>
      ) : (
        <>
          <dl className="facts">
            <dt>Status</dt>
            <dd>{status && <StatusBadge status={status} testId="run-data-status" />}</dd>
            <dt>Attempts</dt>
            <dd data-testid="run-data-attempts">
              {attemptLabel(nodeRun, maxAttempts)}
            </dd>
            <dt>Duration</dt>
            <dd>{formatDuration(duration)}</dd>
            {nodeRun.workerId && (
              <>
                <dt>Worker</dt>
                <dd className="truncate" title={nodeRun.workerId} data-testid="run-data-worker">
                  {nodeRun.workerId}
                </dd>
              </>
            )}
            {nodeRun.childInstanceId && (
              <>
                <dt>Called run</dt>
                <dd>
                  <ChildRunLink runId={nodeRun.childInstanceId} testId="run-data-child-run" />
                </dd>
              </>
            )}
            {nodeRun.pinned && (
              <>
                <dt>Source</dt>
                <dd>pinned output</dd>
              </>
            )}
          </dl>
          {nodeRun.error && (
            <div className="error-box" data-testid="run-data-error">
              {nodeRun.error}
            </div>
          )}
          {opened && openKey !== null && (
            <p className="muted small" data-testid="run-data-iteration">
              Iteration #{openKey}: {opened.status.toLowerCase()}, {attemptLabel(opened, maxAttempts)}
            </p>
          )}
          {opened?.error && opened.error !== nodeRun.error && (
            <div className="error-box" data-testid="run-data-iteration-error">
              {opened.error}
            </div>
          )}
          <h4 className="section-title">Input context</h4>
          <JsonView value={shownContext} testId="run-data-input" />
          <h4 className="section-title">Output</h4>
          {shown?.outputTruncated ? (
            <TruncatedOutput truncated={shown.outputTruncated} testId="run-data-output-truncated" />
          ) : (
            <JsonView value={shown?.output} testId="run-data-output" empty="no output" />
          )}
          {shown?.logs && (
            <>
              <h4 className="section-title">Logs</h4>
              <pre className="logs" data-testid="run-data-logs">
                {shown.logs}
              </pre>
            </>
          )}
          {iterations.length > 0 && (
            <>
              <h4 className="section-title">Iterations ({iterations.length})</h4>
              <table className="table table--compact">
                <tbody>
                  {iterations.map(([key, it]) => (
                    <tr
                      key={key}
                      className="iteration-row"
                      aria-selected={key === openKey}
                      data-testid={`iteration-row-${key}`}
                      tabIndex={0}
                      onClick={() => setPicked(key)}
                      onKeyDown={(e) => {
                        if (e.key === 'Enter' || e.key === ' ') setPicked(key);
                      }}
                    >
                      <td>#{key}</td>
                      <td>
                        <StatusBadge status={it.status} />
                      </td>
                      <td className="mono truncate">
                        {it.error ??
                          (it.outputTruncated ? (
                            <a href={it.outputTruncated.href} target="_blank" rel="noreferrer" data-testid="iteration-output-link">
                              {formatBytes(it.outputTruncated.bytes)}: open
                            </a>
                          ) : (
                            formatJson(it.output)
                          ))}
                      </td>
                      {iterations.some(([, i]) => i.childInstanceId) && (
                        <td>{it.childInstanceId && <ChildRunLink runId={it.childInstanceId} testId="iteration-child-run" />}</td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
        </>
      )}
      {onTestFromHere && <PinEditor node={node} />}
    </div>
  );
}
