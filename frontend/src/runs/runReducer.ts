/** A run as the editor shows it: a pure fold of REST snapshots and Socket.IO messages (SPEC §5, §9). */
import type { NodeUpdateMessage, RealtimeMessage } from '../api/realtime-types';
import type { NodeState, NodeStatus, RunDetail, RunStatus } from '../api/types';
import type { OutputTruncatedOut } from '../generated/api';
import { NODE_STATUS_RANK, TERMINAL_NODE_STATUSES, TERMINAL_RUN_STATUSES } from '../generated/statuses';
import { dict, dictOf, own, withKey, type Dict } from '../shared/dict';
import { seedDelays, trackDelays, type DelayTracking } from './delays';

export type NodeRun = NodeState;

export type LogLine = {
  at: number;
  nodeId: string;
  iteration: string;
  status: NodeStatus;
  attempt: number;
  error: string | null;
};

export type RunView = {
  runId: string;
  isTest: boolean;
  status: RunStatus;
  input: unknown;
  output: unknown;
  /** The run's output when too large to send: its size and where to read it in full. */
  outputTruncated?: OutputTruncatedOut | null;
  error: string | null;
  /** By node id: a null-prototype record (ids such as `__proto__` are valid), built with shared/dict. */
  nodes: Dict<NodeRun>;
  log: LogLine[];
  /** When the run passed options.slaSeconds unfinished (null or absent: it has not). */
  slaBreachedAt?: number | null;
  /** Delays waiting to fall due, followed live (runs/delays.ts). */
  delays?: DelayTracking;
};

export type RunAction =
  | RealtimeMessage
  | { kind: 'started'; runId: string; input: unknown; isTest: boolean }
  | { kind: 'detail'; detail: RunDetail }
  | { kind: 'stopped' };

const LOG_LIMIT = 1000;

type Progress = Pick<NodeState, 'attempt' | 'status'> & { waitingFor?: NodeState['waitingFor'] };

/** Whether `next` moves a node forward (by attempt, then by status), as the backend's relay decides. A WAITING
 * approval announced again with more decisions counted ("1 of 2") moves it forward too. */
export function isNewer(current: Progress | undefined, next: Progress): boolean {
  if (!current) return true;
  if (next.attempt !== current.attempt) return next.attempt > current.attempt;
  if (next.status === 'WAITING' && current.status === 'WAITING') return decided(next) > decided(current);
  return NODE_STATUS_RANK[next.status] > NODE_STATUS_RANK[current.status];
}

function decided(node: Progress): number {
  return node.waitingFor?.decisions?.length ?? 0;
}

export function emptyNode(): NodeRun {
  return { status: 'PENDING', attempt: 0, startedAt: null, completedAt: null, output: null, error: null };
}

/**
 * "attempt 1 of 3, retry 2": attempts count within the node's current retry, never "4/3". A loop-body node
 * shows the attempts of the iteration that decides its status (`leadIteration`), never "attempt 0".
 */
export function attemptLabel(
  node: Pick<NodeState, 'attempt' | 'attemptInRetry' | 'retry'> & { iterations?: NodeState['iterations'] },
  maxAttempts: number,
): string {
  const shown = leadIteration(node) ?? node;
  if (shown.attempt === 0) return 'not started';
  return `attempt ${attemptPlace(shown, maxAttempts)}`;
}

/** Where one attempt stands: "2 of 3, retry 1" (or "2, retry 1" without the maximum), counted as the API counts. */
export function attemptPlace(a: { attempt: number; attemptInRetry?: number | null; retry?: number | null }, maxAttempts?: number): string {
  const within = a.attemptInRetry || a.attempt;
  return `${within}${maxAttempts ? ` of ${maxAttempts}` : ''}${a.retry ? `, retry ${a.retry}` : ''}`;
}

function applyNode(current: NodeRun | undefined, msg: NodeUpdateMessage): NodeRun {
  const base = current ?? emptyNode();
  const terminal = TERMINAL_NODE_STATUSES.has(msg.status);
  // A partial retry dispatches the node again at its next attempt: a new retry, counted from 1.
  const retried = msg.status === 'DISPATCHED' && base.attempt > 0 && msg.attempt > base.attempt;
  const firstOfRetry = retried ? msg.attempt : base.attempt > 0 ? base.attempt - (base.attemptInRetry ?? base.attempt) + 1 : 1;
  return {
    ...base,
    status: msg.status,
    attempt: msg.attempt,
    attemptInRetry: Math.max(1, msg.attempt - firstOfRetry + 1),
    retry: (base.retry ?? 0) + (retried ? 1 : 0),
    startedAt: base.startedAt ?? (msg.status === 'RUNNING' || terminal ? msg.at : null),
    completedAt: terminal ? msg.at : base.completedAt,
    output: msg.status === 'COMPLETED' || msg.status === 'SKIPPED' ? msg.output : base.output,
    // Too large to send: its size and where to read it in full (engine/output_view.py).
    outputTruncated: msg.status === 'COMPLETED' || msg.status === 'SKIPPED' ? (msg.outputTruncated ?? null) : base.outputTruncated,
    error: msg.error ?? (msg.status === 'COMPLETED' ? null : base.error),
    pinned: msg.pinned ?? base.pinned ?? false,
    // RETRYING: when the next attempt starts; DISPATCHED: when a delayed node falls due.
    nextAttemptAt: msg.status === 'RETRYING' || msg.status === 'DISPATCHED' ? (msg.nextAttemptAt ?? null) : null,
    childInstanceId: msg.childInstanceId ?? base.childInstanceId ?? null,
    // A wait node while WAITING: what resumes it (its URL) and until when.
    waitingFor: msg.status === 'WAITING' ? (msg.waitingFor ?? null) : null,
  };
}

/**
 * `node` with the child run id that `other` knows and it does not (on the node and on each iteration).
 * The id may come on an update that moves nothing (a second RUNNING), or only in a snapshot, and the
 * link to the child run must not wait for the node's next move.
 */
export function withChildRun(node: NodeRun, other: Pick<NodeRun, 'childInstanceId' | 'iterations'> | undefined): NodeRun {
  if (!other) return node;
  let next = node;
  if (!node.childInstanceId && other.childInstanceId) next = { ...next, childInstanceId: other.childInstanceId };
  const theirs = other.iterations;
  if (theirs && node.iterations) {
    let iterations = node.iterations;
    for (const [key, it] of Object.entries(theirs)) {
      const mine = own(iterations, key);
      if (mine && !mine.childInstanceId && it.childInstanceId) iterations = withKey<NodeRun>(iterations, key, { ...mine, childInstanceId: it.childInstanceId });
    }
    if (iterations !== node.iterations) next = { ...next, iterations };
  }
  return next;
}

function nodeUpdate(state: RunView, msg: NodeUpdateMessage): RunView {
  const existing = own(state.nodes, msg.nodeID);
  const line: LogLine = {
    at: msg.at,
    nodeId: msg.nodeID,
    iteration: msg.iteration,
    status: msg.status,
    attempt: msg.attempt,
    error: msg.error,
  };
  const log = [...state.log, line].slice(-LOG_LIMIT);
  if (msg.iteration) {
    const parent = existing ?? emptyNode();
    const iterations = parent.iterations ?? dict<NodeRun>();
    const current = own(iterations, msg.iteration);
    if (!isNewer(current, msg)) {
      if (!current || !msg.childInstanceId || current.childInstanceId) return { ...state, log };
      const kept: NodeRun = { ...parent, iterations: withKey<NodeRun>(iterations, msg.iteration, { ...current, childInstanceId: msg.childInstanceId }) };
      return { ...state, log, nodes: withKey(state.nodes, msg.nodeID, kept) };
    }
    const updated: NodeRun = { ...parent, iterations: withKey<NodeRun>(iterations, msg.iteration, applyNode(current, msg)) };
    return { ...state, log, nodes: withKey(state.nodes, msg.nodeID, updated) };
  }
  if (!isNewer(existing, msg)) {
    if (!existing || !msg.childInstanceId || existing.childInstanceId) return { ...state, log };
    return { ...state, log, nodes: withKey<NodeRun>(state.nodes, msg.nodeID, { ...existing, childInstanceId: msg.childInstanceId }) };
  }
  return { ...state, log, nodes: withKey(state.nodes, msg.nodeID, applyNode(existing, msg)) };
}

function closedNode(node: NodeRun): NodeRun {
  const iterations = node.iterations && Object.values(node.iterations).some((it) => !TERMINAL_NODE_STATUSES.has(it.status))
    ? dict(Object.entries(node.iterations).map(([key, it]) => [key, closedNode(it)] as const))
    : node.iterations;
  const open = !TERMINAL_NODE_STATUSES.has(node.status);
  if (!open && iterations === node.iterations) return node;
  return { ...node, iterations, ...(open ? { status: 'CANCELLED' as const, nextAttemptAt: null, waitingFor: null } : {}) };
}

/**
 * The run ended: a node or iteration left short of a terminal status is CANCELLED (SPEC §2), as the API's
 * own view says (the editor reads it again at the end; until then the canvas must not show a node running).
 */
export function closedNodes(nodes: Dict<NodeRun>): Dict<NodeRun> {
  const entries = Object.entries(nodes);
  const next = entries.map(([id, node]) => [id, closedNode(node)] as const);
  return next.every(([, node], i) => node === entries[i]?.[1]) ? nodes : dict(next);
}

export function startedRun(runId: string, input: unknown, isTest: boolean): RunView {
  return { runId, isTest, status: 'PENDING', input, output: null, error: null, nodes: dict(), log: [] };
}

/** Node states as the API sends them (parsed JSON: plain objects) as null-prototype records. */
export function nodesOf(nodes: Readonly<Record<string, NodeState>> | null | undefined): Dict<NodeRun> {
  return dict(
    Object.entries(nodes ?? {}).map(([id, node]) => [id, node.iterations ? { ...node, iterations: dictOf(node.iterations) } : node] as const),
  );
}

export function runReducer(state: RunView | null, action: RunAction): RunView | null {
  switch (action.kind) {
    case 'started':
      return startedRun(action.runId, action.input, action.isTest);
    case 'detail': {
      const d = action.detail;
      return seedDelays({
        runId: d.instanceId,
        isTest: d.isTest,
        status: d.status,
        input: d.input,
        output: d.output,
        outputTruncated: d.outputTruncated ?? null,
        error: d.error,
        nodes: nodesOf(d.nodes),
        log: state?.runId === d.instanceId ? state.log : [],
        slaBreachedAt: d.slaBreachedAt ?? (state?.runId === d.instanceId ? state.slaBreachedAt : null) ?? null,
      });
    }
    case 'stopped':
      return state && { ...state, status: 'CANCELLED', nodes: closedNodes(state.nodes) };
  }
  if (!state || action.instanceID !== state.runId) return state;
  switch (action.kind) {
    case 'snapshot': {
      const nodes = dictOf(state.nodes);
      for (const [id, node] of Object.entries(nodesOf(action.nodes))) {
        const mine = nodes[id];
        nodes[id] = isNewer(mine, node) ? withChildRun(node, mine) : withChildRun(mine ?? node, node);
      }
      const ended = TERMINAL_RUN_STATUSES.has(action.status);
      return seedDelays({ ...state, status: action.status, nodes: ended ? closedNodes(nodes) : nodes, slaBreachedAt: action.slaBreachedAt ?? state.slaBreachedAt ?? null });
    }
    case 'node':
      return trackDelays(nodeUpdate(state, action), action);
    case 'status':
      return {
        ...state,
        nodes: TERMINAL_RUN_STATUSES.has(action.status) ? closedNodes(state.nodes) : state.nodes,
        status: action.status,
        output: action.output ?? state.output,
        outputTruncated: action.outputTruncated ?? state.outputTruncated ?? null,
        error: action.error,
      };
    case 'sla':
      return { ...state, slaBreachedAt: state.slaBreachedAt ?? action.at };
  }
}

/**
 * The status a canvas shows for a node: a loop-body node's is its iterations summed up, the rule the API's
 * own entry for it follows (docs/api.md "Loop bodies"): FAILED if any failed, else RUNNING if any is still
 * moving, else WAITING if any is parked on a wait node, else CANCELLED if any was cancelled, else SKIPPED if all
 * were skipped, else COMPLETED.
 */
export function displayStatus(node: NodeRun | undefined): NodeStatus | null {
  if (!node) return null;
  const iterations = Object.values(node.iterations ?? {});
  return iterations.length === 0 ? node.status : summedStatus(iterations);
}

function summedStatus(iterations: readonly NodeRun[]): NodeStatus {
  if (iterations.some((i) => i.status === 'FAILED')) return 'FAILED';
  if (iterations.some((i) => !TERMINAL_NODE_STATUSES.has(i.status) && i.status !== 'WAITING')) return 'RUNNING';
  if (iterations.some((i) => i.status === 'WAITING')) return 'WAITING';
  if (iterations.some((i) => i.status === 'CANCELLED')) return 'CANCELLED';
  if (iterations.every((i) => i.status === 'SKIPPED')) return 'SKIPPED';
  return 'COMPLETED';
}

/** A loop-body node's iteration that decides its status (the first failed one, say), else its last; null without iterations. */
export function leadIteration(node: { iterations?: NodeState['iterations'] }): NodeRun | null {
  const iterations = Object.values(node.iterations ?? {});
  if (iterations.length === 0) return null;
  const summed = summedStatus(iterations);
  const moving = (s: NodeStatus) => (TERMINAL_NODE_STATUSES.has(s) || s === 'WAITING' ? s : 'RUNNING');
  return iterations.find((i) => moving(i.status) === summed) ?? iterations[iterations.length - 1] ?? null;
}

/** When a node ran: its own times, or from its first iteration's start to its last one's end. */
export function timeSpan(node: NodeRun | undefined): { start: number | null; end: number | null; iterations: number } {
  const iterations = Object.values(node?.iterations ?? {});
  if (!node || iterations.length === 0) return { start: node?.startedAt ?? null, end: node?.completedAt ?? null, iterations: 0 };
  const starts = iterations.map((i) => i.startedAt).filter((t): t is number => t !== null);
  const ends = iterations.map((i) => i.completedAt).filter((t): t is number => t !== null);
  return {
    start: starts.length ? Math.min(...starts) : null,
    end: ends.length === iterations.length && ends.length > 0 ? Math.max(...ends) : null,
    iterations: iterations.length,
  };
}

/** Node id → output of every COMPLETED node (for pins, "Test from here" and template suggestions). */
export function completedOutputs(run: RunView | null): Dict<unknown> {
  const outputs = dict<unknown>();
  for (const [id, node] of Object.entries(run ? nodesOf(run.nodes) : {})) {
    if (node.status === 'COMPLETED' && !node.iterations) outputs[id] = node.output; // a loop body's outputs are per iteration
  }
  return outputs;
}
