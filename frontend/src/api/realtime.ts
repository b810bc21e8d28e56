/** The Socket.IO client (SPEC §9): one shared connection (session cookie), a room per run. */
import { io, type Socket } from 'socket.io-client';

import { SOCKET_EVENTS, type NodeUpdateMessage, type RealtimeMessage, type SnapshotMessage, type SlaBreachMessage, type StatusUpdateMessage } from './realtime-types';

type ServerEvents = {
  [SOCKET_EVENTS.snapshot]: (msg: Omit<SnapshotMessage, 'kind'>) => void;
  [SOCKET_EVENTS.node]: (msg: Omit<NodeUpdateMessage, 'kind'>) => void;
  [SOCKET_EVENTS.status]: (msg: Omit<StatusUpdateMessage, 'kind'>) => void;
  [SOCKET_EVENTS.sla]: (msg: Omit<SlaBreachMessage, 'kind'>) => void;
  [SOCKET_EVENTS.workflowSaved]: (msg: WorkflowSaved) => void;
};

/** A version of a workflow this connection edits was saved (by this tab, another one, or another user). */
export type WorkflowSaved = { workflowId: string; version: number; author: string | null; message: string | null };
type JoinAck = { ok: true } | { ok: false; error: string };
type ClientEvents = {
  [SOCKET_EVENTS.join]: (payload: { runId: string }, ack: (answer: JoinAck) => void) => void;
  [SOCKET_EVENTS.leave]: (payload: { runId: string }, ack: (answer: JoinAck) => void) => void;
  [SOCKET_EVENTS.workflowJoin]: (payload: { workflowId: string }, ack: (answer: JoinAck) => void) => void;
  [SOCKET_EVENTS.workflowLeave]: (payload: { workflowId: string }, ack: (answer: JoinAck) => void) => void;
};

export type ConnectionState = 'connecting' | 'connected' | 'disconnected';

let socket: Socket<ServerEvents, ClientEvents> | null = null;
const listeners = new Set<(msg: RealtimeMessage) => void>();
const stateListeners = new Set<(state: ConnectionState) => void>();
const joined = new Set<string>();
const watched = new Map<string, Set<(msg: WorkflowSaved) => void>>();

function emitState(state: ConnectionState): void {
  stateListeners.forEach((l) => l(state));
}

function dispatch(msg: RealtimeMessage): void {
  listeners.forEach((l) => l(msg));
}

function connect(): Socket<ServerEvents, ClientEvents> {
  if (socket) return socket;
  const s: Socket<ServerEvents, ClientEvents> = io({ path: '/socket.io', withCredentials: true, transports: ['websocket', 'polling'] });
  s.on('connect', () => emitState('connected'));
  // After a reconnect the server forgot our rooms: join again (each join sends a fresh snapshot).
  s.io.on('reconnect', () => {
    joined.forEach((runId) => s.emit(SOCKET_EVENTS.join, { runId }, () => undefined));
    watched.forEach((_, workflowId) => s.emit(SOCKET_EVENTS.workflowJoin, { workflowId }, () => undefined));
  });
  s.on(SOCKET_EVENTS.workflowSaved, (msg) => watched.get(msg.workflowId)?.forEach((l) => l(msg)));
  s.on('disconnect', () => emitState('disconnected'));
  s.on('connect_error', () => emitState('disconnected'));
  s.on(SOCKET_EVENTS.snapshot, (msg) => dispatch({ kind: 'snapshot', ...msg }));
  s.on(SOCKET_EVENTS.node, (msg) => dispatch({ kind: 'node', ...msg }));
  s.on(SOCKET_EVENTS.status, (msg) => dispatch({ kind: 'status', ...msg }));
  s.on(SOCKET_EVENTS.sla, (msg) => dispatch({ kind: 'sla', ...msg }));
  socket = s;
  emitState('connecting');
  return s;
}

/**
 * Open the shared connection ahead of need (the editor does, once it has rendered), so the first
 * Test run joins its room at once instead of first waiting for the WebSocket and the server's auth.
 */
export function preconnectRealtime(): void {
  connect();
}

export function onConnectionState(listener: (state: ConnectionState) => void): () => void {
  stateListeners.add(listener);
  listener(socket?.connected ? 'connected' : 'connecting');
  return () => stateListeners.delete(listener);
}

/**
 * Follow one run: `onMessage` gets its snapshot and every later update. Resolves when the join is acknowledged;
 * call the returned function to leave.
 */
export async function subscribeToRun(runId: string, onMessage: (msg: RealtimeMessage) => void): Promise<() => void> {
  const s = connect();
  const listener = (msg: RealtimeMessage) => {
    if (msg.instanceID === runId) onMessage(msg);
  };
  listeners.add(listener);
  joined.add(runId);
  const ack = await new Promise<JoinAck>((resolve) => {
    s.timeout(10_000).emit(SOCKET_EVENTS.join, { runId }, (err: Error | null, answer: JoinAck) =>
      resolve(err ? { ok: false, error: 'the server did not answer the join' } : answer),
    );
  });
  const leave = () => {
    listeners.delete(listener);
    joined.delete(runId);
    if (s.connected) s.emit(SOCKET_EVENTS.leave, { runId }, () => undefined);
  };
  if (!ack.ok) {
    leave();
    throw new Error(ack.error);
  }
  return leave;
}

/**
 * Hear every version saved of a workflow (the editor's "saved elsewhere" notice). Joining waits for the
 * connection; a refusal (deleted meanwhile) only means no notice. Returns the function that stops it.
 */
export function watchWorkflow(workflowId: string, onSaved: (msg: WorkflowSaved) => void): () => void {
  const s = connect();
  let listeners = watched.get(workflowId);
  if (!listeners) {
    listeners = new Set();
    watched.set(workflowId, listeners);
    s.emit(SOCKET_EVENTS.workflowJoin, { workflowId }, () => undefined);
  }
  listeners.add(onSaved);
  return () => {
    const current = watched.get(workflowId);
    current?.delete(onSaved);
    if (current && current.size === 0) {
      watched.delete(workflowId);
      if (s.connected) s.emit(SOCKET_EVENTS.workflowLeave, { workflowId }, () => undefined);
    }
  };
}

export function disconnectRealtime(): void {
  socket?.disconnect();
  socket = null;
  joined.clear();
  watched.clear();
}
