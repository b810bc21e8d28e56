/** The canvas node: icon, label, type, live status, problems, and the handles its type really has. */
import { Handle, Position, useUpdateNodeInternals, type NodeProps } from '@xyflow/react';
import { memo, useEffect, useRef, useState } from 'react';
import { Link } from 'react-router';

import { DecisionButtons } from '../../approvals/DecisionButtons';
import { sourceHandles, TARGET_HANDLE, hasTargetHandle } from '../../graph/handles';
import { DEFAULT_RETRY, NODE_TYPE_INFO, type EditorNode } from '../../graph/model';
import { attemptLabel, displayStatus, type NodeRun } from '../../runs/runReducer';
import { formatWait } from '../../shared/format';
import { PinIcon } from '../../shared/ui/icons';
import { useEditorShallow } from '../storeContext';
import { useWorkflowTitle } from '../workflowTitles';

const STATUS_TEXT: Record<string, string> = {
  PENDING: 'Waiting',
  DISPATCHED: 'Queued',
  RUNNING: 'Running…',
  WAITING: 'Waiting',
  COMPLETED: 'Completed',
  FAILED: 'Failed',
  SKIPPED: 'Skipped',
  CANCELLED: 'Cancelled',
};

function useNow(active: boolean): number {
  const [now, setNow] = useState(() => Date.now() / 1000);
  useEffect(() => {
    if (!active) return;
    const t = window.setInterval(() => setNow(Date.now() / 1000), 500);
    return () => window.clearInterval(t);
  }, [active]);
  return now;
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function RetryLine({ run, maxAttempts }: { run: NodeRun; maxAttempts: number }) {
  const now = useNow(true);
  const wait = run.nextAttemptAt ? Math.max(0, Math.ceil(run.nextAttemptAt - now)) : null;
  return (
    <>
      {capitalised(attemptLabel(run, maxAttempts))} failed · retrying{wait !== null ? ` in ${wait}s` : '…'}
    </>
  );
}

/** A node queued behind a delay: it starts when its due time comes. */
function DueLine({ dueAt, done = false }: { dueAt: number; done?: boolean }) {
  const now = useNow(true);
  const wait = Math.max(0, Math.ceil(dueAt - now));
  return <span data-testid="node-due">Waiting · {done ? 'done' : 'starts'} in {formatWait(wait)}</span>;
}

const WAITING_FOR: Record<string, string> = {
  webhook: 'Waiting for a call',
  form: 'Waiting for a form',
  approval: 'Waiting for an approval',
};

/** A waiting wait node: what it waits for, and its URL to copy or open (a form opens in a new tab). */
function WaitingLine({ waitingFor }: { waitingFor: NonNullable<NodeRun['waitingFor']> }) {
  if (waitingFor.resumeOn === 'approval' && waitingFor.approvalId) {
    return (
      <div className="fd-node__waiting nodrag nopan" data-testid="node-waiting">
        <div>{WAITING_FOR.approval}</div>
        <DecisionButtons approvalId={waitingFor.approvalId} compact />
      </div>
    );
  }
  const url = waitingFor.url ? new URL(waitingFor.url, window.location.origin).href : null;
  return (
    <div className="fd-node__waiting nodrag nopan" data-testid="node-waiting">
      <div>{WAITING_FOR[waitingFor.resumeOn] ?? 'Waiting'}</div>
      {url && (
        <div className="fd-node__waiting-url">
          <input className="input input--small" readOnly value={url} aria-label="Resume URL" data-testid="node-resume-url" onFocus={(e) => e.target.select()} />
          <button type="button" className="btn btn--small" onClick={() => void navigator.clipboard?.writeText(url)}>
            Copy
          </button>
          {waitingFor.resumeOn === 'form' && (
            <a href={url} target="_blank" rel="noreferrer" data-testid="node-open-form" onClick={(e) => e.stopPropagation()}>
              Open form
            </a>
          )}
        </div>
      )}
    </div>
  );
}

/** A Run workflow node's card names the workflow it calls (its title, read once and shared). */
function CalledWorkflow({ workflowId, version }: { workflowId: string; version: number | undefined }) {
  const title = useWorkflowTitle(workflowId);
  if (!workflowId) return <div className="fd-node__called muted">no workflow picked</div>;
  return (
    <div className={`fd-node__called${title === false ? ' text-error' : ''}`} data-testid="node-called-workflow" title={workflowId}>
      ↳ {title === false ? `missing: ${workflowId}` : (title ?? workflowId)}
      {version !== undefined && <span className="muted"> · v{version}</span>}
    </div>
  );
}

/** The run a Run workflow node started: a link to its own run page (the canvas, the editor's run view). */
export function ChildRunLink({ runId, testId = 'child-run-link' }: { runId: string; testId?: string }) {
  return (
    <Link className="child-run-link nodrag nopan" to={`/runs/${encodeURIComponent(runId)}`} data-testid={testId} onClick={(e) => e.stopPropagation()}>
      Child run →
    </Link>
  );
}

function FlowNodeView({ id, data, type, selected }: NodeProps<EditorNode>) {
  const info = NODE_TYPE_INFO[type];
  const node = { id, type, data } as EditorNode;
  const handles = sourceHandles(node);
  // One subscription per node, compared shallowly: a store update re-renders only the nodes whose
  // own run state, pin or problems changed.
  const { run, pinned, problems } = useEditorShallow((s) => ({
    run: s.run?.nodes[id],
    pinned: id in s.pins,
    problems: s.problemIndex.byNode[id],
  }));
  const updateInternals = useUpdateNodeInternals();
  const handleKey = handles.map((h) => h.id).join('|');
  // React Flow measures a node's handles when it mounts (its ResizeObserver, one batch for all nodes);
  // only a later change of handles (a condition's branches) needs a re-measure. Calling it on mount too
  // cost one store update per node, each re-running every node's and edge's selectors (quadratic).
  const measuredKey = useRef(handleKey);
  useEffect(() => {
    if (measuredKey.current === handleKey) return;
    measuredKey.current = handleKey;
    updateInternals(id);
  }, [handleKey, id, updateInternals]);

  const status = displayStatus(run);
  const errors = problems?.filter((p) => p.severity !== 'warning') ?? [];
  const warnings = problems?.filter((p) => p.severity === 'warning') ?? [];
  const problemState = errors.length > 0 ? 'error' : warnings.length > 0 ? 'warning' : 'none';
  const variable = data.outputVariable || id;
  const iterations = Object.keys(run?.iterations ?? {}).length;
  const maxAttempts = data.retry?.maxAttempts ?? DEFAULT_RETRY.maxAttempts;

  return (
    <div
      className={`fd-node${selected ? ' is-selected' : ''}`}
      data-testid="flow-node"
      data-type={type}
      data-status={status ?? 'IDLE'}
      data-problems={problemState}
      style={{ ['--accent' as string]: info.color }}
      title={problems?.map((p) => p.message).join('\n')}
    >
      {hasTargetHandle(type) && <Handle type="target" position={Position.Left} id={TARGET_HANDLE} className="fd-handle fd-handle--in" />}
      <div className="fd-node__head">
        <span className="fd-node__icon" aria-hidden>
          {info.icon}
        </span>
        <div className="fd-node__titles">
          <div className="fd-node__label">{data.label || info.title}</div>
          <div className="fd-node__type">
            {info.title}
            {type !== 'end' && <span className="fd-node__var"> · ctx.{variable}</span>}
          </div>
        </div>
        {pinned && (
          <span className="fd-node__pin" title="Pinned output: test runs use it instead of running this node" data-testid="pin-badge">
            <PinIcon />
          </span>
        )}
        {problemState !== 'none' && (
          <span className={`fd-node__problems fd-node__problems--${problemState}`} data-testid="node-problem-badge">
            {errors.length + warnings.length}
          </span>
        )}
      </div>
      {node.type === 'workflow' && <CalledWorkflow workflowId={node.data.config.workflowId} version={node.data.config.version} />}
      {handles.length > 1 && (
        <div className="fd-node__outputs">
          {handles.map((h) => (
            <div key={h.id} className={`fd-node__output fd-node__output--${h.tone}`}>
              <span>{h.label}</span>
              <Handle type="source" position={Position.Right} id={h.id} className={`fd-handle fd-handle--${h.tone}`} />
            </div>
          ))}
        </div>
      )}
      {handles.length === 1 && handles[0] && (
        <Handle type="source" position={Position.Right} id={handles[0].id} className="fd-handle fd-handle--default" />
      )}
      {status && status !== 'PENDING' && (
        <div className={`fd-node__status fd-node__status--${status.toLowerCase()}`} data-testid="node-status">
          {status === 'RETRYING' && run ? (
            <RetryLine run={run} maxAttempts={maxAttempts} />
          ) : status === 'DISPATCHED' && run?.nextAttemptAt ? (
            <DueLine dueAt={run.nextAttemptAt} />
          ) : status === 'WAITING' && run?.nextAttemptAt && !run.waitingFor ? (
            <DueLine dueAt={run.nextAttemptAt} done />
          ) : status === 'WAITING' && run?.waitingFor ? (
            <WaitingLine waitingFor={run.waitingFor} />
          ) : (
            STATUS_TEXT[status]
          )}
          {status === 'RUNNING' && run && (run.attemptInRetry ?? run.attempt) > 1 && ` (${attemptLabel(run, maxAttempts)})`}
          {iterations > 0 && ` · ${iterations} iteration${iterations === 1 ? '' : 's'}`}
          {run?.pinned && ' · pinned'}
          {(status === 'FAILED' || status === 'RETRYING') && run?.error && <div className="fd-node__error">{run.error}</div>}
          {run?.childInstanceId && (
            <div>
              <ChildRunLink runId={run.childInstanceId} />
            </div>
          )}
        </div>
      )}
      {errors[0] && !status && <div className="fd-node__problem-text">{errors[0].message}</div>}
    </div>
  );
}

export const FlowNode = memo(FlowNodeView);
