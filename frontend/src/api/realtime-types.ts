/** SPEC §9 Socket.IO payloads, as one discriminated union (`kind` is added on receipt). */
import type { NodeState, NodeStatus, RunStatus } from './types';

export type SnapshotMessage = {
  kind: 'snapshot';
  instanceID: string;
  status: RunStatus;
  nodes: Record<string, NodeState>;
  /** When the run passed options.slaSeconds unfinished (null: it has not). */
  slaBreachedAt?: number | null;
};

export type NodeUpdateMessage = {
  kind: 'node';
  instanceID: string;
  nodeID: string;
  iteration: string;
  status: NodeStatus;
  attempt: number;
  output: unknown;
  error: string | null;
  at: number;
  /** Not sent by the backend yet (its NodeUpdate has them); used when present. */
  pinned?: boolean;
  nextAttemptAt?: number | null;
};

export type StatusUpdateMessage = {
  kind: 'status';
  instanceID: string;
  status: RunStatus;
  output: unknown;
  error: string | null;
};

/** `workflow_sla_breach`: the run passed options.slaSeconds unfinished; it goes on. */
export type SlaBreachMessage = {
  kind: 'sla';
  instanceID: string;
  slaSeconds: number;
  at: number;
};

export type RealtimeMessage = SnapshotMessage | NodeUpdateMessage | StatusUpdateMessage | SlaBreachMessage;

export const SOCKET_EVENTS = {
  join: 'workflow_run_join',
  leave: 'workflow_run_leave',
  snapshot: 'workflow_run_snapshot',
  node: 'workflow_node_update',
  status: 'workflow_status_update',
  sla: 'workflow_sla_breach',
} as const;
