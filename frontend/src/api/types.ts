/**
 * The REST shapes of SPEC §5 as the backend answers them (api/schemas.py: camelCase, epoch seconds).
 * Hand-written to mirror the msgspec Structs; keep them in step when the backend changes.
 */
import type { DefinitionJson, EdgeJson, NodeJson, WorkflowOptions } from '../graph/convert';
import type { NodeStatus, RunStatus } from '../generated/statuses';

// The statuses are generated from the backend's domain/statuses.py (`flowdeck generate`).
export type { NodeStatus, RunStatus };
export { RUN_STATUSES, TERMINAL_RUN_STATUSES } from '../generated/statuses';

export type Page<T> = { items: T[]; nextCursor: string | null };

export type User = { id: string; email: string; tenantId: string; tenantName: string };
export type Session = { user: User; authMethod: 'session' | 'token'; csrfToken?: string | null };

export type Severity = 'error' | 'warning';
export type Problem = {
  code: string;
  message: string;
  severity?: Severity;
  nodeId?: string;
  edgeId?: string;
  path?: string;
};
export type ValidationResult = { valid: boolean; problems: Problem[] };

export type Workflow = {
  id: string;
  version: number;
  title: string;
  description: string | null;
  options: WorkflowOptions | null;
  nodes: NodeJson[];
  edges: EdgeJson[];
  createdAt: number;
  updatedAt: number;
};
export type WorkflowSummary = Pick<Workflow, 'id' | 'title' | 'description' | 'version' | 'createdAt' | 'updatedAt'>;
export type VersionSummary = { version: number; title: string; createdAt: number };

export type SaveBody = DefinitionJson & { version: number };

export type RunAccepted = { instanceId: string };

export type RunSummary = {
  instanceId: string;
  workflowId: string | null;
  version: number | null;
  isTest: boolean;
  status: RunStatus;
  trigger: string;
  error: string | null;
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
  /** PENDING runs: when the scheduled start falls due (availableAt). */
  availableAt?: number | null;
  /** When the run passed options.slaSeconds unfinished (null: it has not). */
  slaBreachedAt?: number | null;
};

/** options.onFailure / options.onSlaBreach: GET /api/workflows/{id}/notifications (the secret only the first time). */
export type NotificationSettings = { hasSecret: boolean; createdAt: number | null; secret?: string };
/** POST /api/workflows/{id}/notifications/test: what the receiver answered. */
export type NotificationTest = { url: string; ok: boolean; status: number | null; error: string | null };

export type NodeState = {
  status: NodeStatus;
  attempt: number;
  startedAt: number | null;
  completedAt: number | null;
  output: unknown;
  error: string | null;
  pinned?: boolean;
  logs?: string | null;
  /** RETRYING: when the next attempt starts; DISPATCHED behind a delay: when it falls due. */
  nextAttemptAt?: number | null;
  /** The worker that started the latest attempt (after a takeover: the new holder). */
  workerId?: string | null;
  /** The attempt within the node's current retry ("attempt 1 of 3"); `attempt` counts every attempt of the run. */
  attemptInRetry?: number;
  /** How many partial retries ran this node again (0: the original run). */
  retry?: number;
  iterations?: Record<string, NodeState> | null;
};

export type RunDetail = RunSummary & {
  input: unknown;
  output: unknown;
  nodes: Record<string, NodeState>;
  /** How many partial retries the run has had. */
  retry?: number;
};

export type RetryVersion = 'original' | 'latest';

export type RunEvent = {
  logId: number;
  instanceId: string;
  nodeId: string | null;
  iteration: string;
  eventType: string;
  nodeStatus: string | null;
  outputVariable: string | null;
  payload: unknown;
  errorMessage: string | null;
  nodeAttempt: number;
  createdAt: number;
};

export type TimelineRow = {
  nodeId: string;
  iteration: string;
  attempt: number;
  status: NodeStatus;
  startedAt: number | null;
  completedAt: number | null;
  /** The worker that ran this attempt. */
  workerId?: string | null;
  /** The attempt ended when another worker took the node over (its lease ran out). */
  takenOver?: boolean;
};

export type RunAction = { instanceId: string; status: RunStatus; nodeIds: string[] };

/** SPEC §6 data sources and saved queries: see data/api.ts. */

/** GET /api/examples: a workflow to start from (POST /api/examples/{id} makes it), with a sample input. */
export type Example = { id: string; title: string; description: string; input: unknown };

/** SPEC §8 webhook of a workflow (GET /api/workflows/{id}/webhook); `url` is a path (`/hooks/<id>`). */
export type WebhookInfo = { url: string; hasSecret: boolean; createdAt: number | null; lastUsedAt: number | null };
/** POST /api/workflows/{id}/webhook/secret: the new secret, shown once (the old one stops working). */
export type WebhookSecret = { url: string; secret: string };
