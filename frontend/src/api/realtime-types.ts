/**
 * SPEC §9 Socket.IO payloads, as one discriminated union (`kind` is added on receipt). The payloads and event
 * names are generated from the backend's realtime/messages.py (`flowdeck generate`), so they cannot drift.
 */
import type { NodeUpdatePayload, SlaBreachPayload, SnapshotPayload, StatusUpdatePayload } from '../generated/realtime';
import type { NodeState } from './types';

export { SOCKET_EVENTS } from '../generated/realtime';

/** Its node states may carry `childInstanceId` (SHIM(issue16): api/types NodeState until the payload is regenerated). */
export type SnapshotMessage = { kind: 'snapshot' } & Omit<SnapshotPayload, 'nodes'> & { nodes: Record<string, NodeState> };
/** `childInstanceId` (SHIM(issue16) until the generated payload has it): the child run a `workflow` node started. */
export type NodeUpdateMessage = { kind: 'node' } & NodeUpdatePayload & { childInstanceId?: string | null };
export type StatusUpdateMessage = { kind: 'status' } & StatusUpdatePayload;
/** `workflow_sla_breach`: the run passed options.slaSeconds unfinished; it goes on. */
export type SlaBreachMessage = { kind: 'sla' } & SlaBreachPayload;

export type RealtimeMessage = SnapshotMessage | NodeUpdateMessage | StatusUpdateMessage | SlaBreachMessage;
