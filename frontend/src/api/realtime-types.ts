/**
 * SPEC §9 Socket.IO payloads, as one discriminated union (`kind` is added on receipt). The payloads and event
 * names are generated from the backend's realtime/messages.py (`flowdeck generate`), so they cannot drift.
 */
import type { NodeUpdatePayload, SlaBreachPayload, SnapshotPayload, StatusUpdatePayload } from '../generated/realtime';

export { SOCKET_EVENTS } from '../generated/realtime';

export type SnapshotMessage = { kind: 'snapshot' } & SnapshotPayload;
/** `childInstanceId` (SHIM(issue16) until the generated payload has it): the child run a `workflow` node started. */
export type NodeUpdateMessage = { kind: 'node' } & NodeUpdatePayload & { childInstanceId?: string | null };
export type StatusUpdateMessage = { kind: 'status' } & StatusUpdatePayload;
/** `workflow_sla_breach`: the run passed options.slaSeconds unfinished; it goes on. */
export type SlaBreachMessage = { kind: 'sla' } & SlaBreachPayload;

export type RealtimeMessage = SnapshotMessage | NodeUpdateMessage | StatusUpdateMessage | SlaBreachMessage;
