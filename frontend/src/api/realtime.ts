/** The Socket.IO client (SPEC §9): one shared connection (session cookie), a room per run. */
import { io, type Socket } from 'socket.io-client';

import { SOCKET_EVENTS, type NodeUpdateMessage, type RealtimeMessage, type SnapshotMessage, type SlaBreachMessage, type StatusUpdateMessage } from './realtime-types';

type ServerEvents = {
  [SOCKET_EVENTS.snapshot]: (msg: Omit<SnapshotMessage, 'kind'>) => void;
  [SOCKET_EVENTS.node]: (msg: Omit<NodeUpdateMessage, 'kind'>) => void;
  [SOCKET_EVENTS.status]: (msg: Omit<StatusUpdateMessage, 'kind'>) => void;
  [SOCKET_EVENTS.sla]: (msg: Omit<SlaBreachMessage, 'kind'>) => void;
};
type JoinAck = { ok: true } | { ok: false; error: string };
type ClientEvents = {
  [SOCKET_EVENTS.join]: (payload: { runId: string }, ack: (answer: JoinAck) => void) => void;
  [SOCKET_EVENTS.leave]: (payload: { runId: string }, ack: (answer: JoinAck) => void) => void;
};

export type ConnectionState = 'connecting' | 'connected' | 'disconnected';

let socket: Socket<ServerEvents, ClientEvents> | null = null;
const listeners = new Set<(msg: RealtimeMessage) => void>();
const stateListeners = new Set<(state: ConnectionState) => void>();
const joined = new Set<string>();

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
  s.io.on('reconnect', () => joined.forEach((runId) => s.emit(SOCKET_EVENTS.join, { runId }, () => undefined)));
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

export function disconnectRealtime(): void {
  socket?.disconnect();
  socket = null;
  joined.clear();
}
