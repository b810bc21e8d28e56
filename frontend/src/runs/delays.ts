/**
 * A delay as people read it, live: WAITING until it falls due, its successors PENDING behind it (the REST
 * detail and the join snapshot say the same: backend storage/delay_fold.py). The engine completes a delay at
 * once and then announces its successors DISPATCHED with `nextAttemptAt` (their due time), right after the
 * delay's COMPLETED update; the first of them to move ends the wait.
 */
import type { NodeUpdateMessage } from '../api/realtime-types';
import type { NodeStatus } from '../api/types';
import { own, withKey } from '../shared/dict';
import type { NodeRun, RunView } from './runReducer';

type Where = { nodeId: string; iteration: string };
type Hold = Where & { due: number };
export type DelayTracking = { last: Where | null; held: Readonly<Record<string, Hold>> };

const MOVES: ReadonlySet<NodeStatus> = new Set(['RUNNING', 'COMPLETED', 'FAILED', 'SKIPPED', 'CANCELLED', 'RETRYING']);
const key = (w: Where) => `${w.nodeId}\u0000${w.iteration}`;

function nodeAt(state: RunView, w: Where): NodeRun | undefined {
  const node = own(state.nodes, w.nodeId);
  return w.iteration ? (node?.iterations ? own(node.iterations, w.iteration) : undefined) : node;
}

function withNode(state: RunView, w: Where, change: (node: NodeRun) => NodeRun): RunView {
  const node = own(state.nodes, w.nodeId);
  if (!node) return state;
  if (!w.iteration) return { ...state, nodes: withKey<NodeRun>(state.nodes, w.nodeId, change(node)) };
  const it = node.iterations ? own(node.iterations, w.iteration) : undefined;
  if (!it || !node.iterations) return state;
  const iterations = withKey<NodeRun>(node.iterations, w.iteration, change(it));
  return { ...state, nodes: withKey<NodeRun>(state.nodes, w.nodeId, { ...node, iterations }) };
}

/**
 * The waits a snapshot or a REST detail shows (a delay WAITING names the successors it `holds`), added to the
 * ones followed live: a client that joined while a delay waited completes it when one of them moves.
 */
export function seedDelays(state: RunView): RunView {
  const seeded: Record<string, Hold> = {};
  for (const [nodeId, node] of Object.entries(state.nodes)) {
    const scopes: [string, NodeRun][] = [['', node], ...Object.entries(node.iterations ?? {})];
    for (const [iteration, run] of scopes) {
      if (run.status !== 'WAITING' || !run.holds || !run.nextAttemptAt) continue;
      for (const successor of run.holds) seeded[key({ nodeId: successor, iteration })] = { nodeId, iteration, due: run.nextAttemptAt };
    }
  }
  if (Object.keys(seeded).length === 0) return state;
  const tracking = state.delays ?? { last: null, held: {} };
  return { ...state, delays: { last: tracking.last, held: { ...tracking.held, ...seeded } } };
}

/** `state` (the run after `msg` was applied) with delays shown as waiting. */
export function trackDelays(state: RunView, msg: NodeUpdateMessage): RunView {
  const tracking = state.delays ?? { last: null, held: {} };
  const here: Where = { nodeId: msg.nodeID, iteration: msg.iteration };
  const last = tracking.last;
  if (msg.status === 'DISPATCHED' && msg.nextAttemptAt && last && last.iteration === msg.iteration && nodeAt(state, last)?.status === 'COMPLETED') {
    const due = msg.nextAttemptAt;
    let next = withNode(state, last, (n) => ({ ...n, status: 'WAITING', completedAt: null, nextAttemptAt: due }));
    next = withNode(next, here, (n) => ({ ...n, status: 'PENDING', nextAttemptAt: null }));
    return { ...next, delays: { last, held: { ...tracking.held, [key(here)]: { ...last, due } } } };
  }
  if (msg.status === 'DISPATCHED' && msg.nextAttemptAt && last && nodeAt(state, last)?.status === 'WAITING') {
    // a further successor of the same delay (the previous one already made it WAITING)
    const due = msg.nextAttemptAt;
    const next = withNode(state, here, (n) => ({ ...n, status: 'PENDING', nextAttemptAt: null }));
    return { ...next, delays: { last, held: { ...tracking.held, [key(here)]: { ...last, due } } } };
  }
  let next = state;
  let held = tracking.held;
  const hold = held[key(here)];
  if (hold && MOVES.has(msg.status)) {
    // the wait is over: the delay completed when it fell due
    next = withNode(next, hold, (n) => (n.status === 'WAITING' ? { ...n, status: 'COMPLETED', completedAt: Math.min(hold.due, msg.at), nextAttemptAt: null } : n));
    held = Object.fromEntries(Object.entries(held).filter(([, h]) => key(h) !== key(hold)));
  }
  return { ...next, delays: { last: msg.status === 'COMPLETED' ? here : null, held } };
}
