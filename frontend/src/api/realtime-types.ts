/**
 * SPEC §9 Socket.IO payloads, as one discriminated union (`kind` is added on receipt). The payloads and event
 * names are generated from the backend's realtime/messages.py (`flowdeck generate`), so they cannot drift.
 */
import type { NodeUpdatePayload, SlaBreachPayload, SnapshotPayload, StatusUpdatePayload } from '../generated/realtime';

export { SOCKET_EVENTS } from '../generated/realtime';

export type SnapshotMessage = { kind: 'snapshot' } & SnapshotPayload;
/** `childInstanceId`: the child run a `workflow` node started (sent on its RUNNING update). */
export type NodeUpdateMessage = { kind: 'node' } & NodeUpdatePayload;
export type StatusUpdateMessage = { kind: 'status' } & StatusUpdatePayload;
/** `workflow_sla_breach`: the run passed options.slaSeconds unfinished; it goes on. */
export type SlaBreachMessage = { kind: 'sla' } & SlaBreachPayload;

export type RealtimeMessage = SnapshotMessage | NodeUpdateMessage | StatusUpdateMessage | SlaBreachMessage;
