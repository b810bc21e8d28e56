/**
 * The REST shapes of SPEC §5 as the backend answers them (api/schemas.py: camelCase, epoch seconds).
 * Aliases of generated/api.ts, which openapi-typescript writes from the OpenAPI document the backend serves
 * (`make api-types`; `make check-api-types` fails when it drifts). Only a workflow's definition is refined
 * here: the API takes and answers it as free JSON (the server validates it), graph/convert.ts owns its shape.
 */
import type { components } from '../generated/api';
import type { DefinitionJson, EdgeJson, NodeJson, NoteJson, WorkflowOptions } from '../graph/convert';

type Schemas = components['schemas'];

// The statuses are generated from the backend's domain/statuses.py (`flowdeck generate`).
export type { NodeStatus, RunStatus } from '../generated/statuses';
export { RUN_STATUSES, TERMINAL_RUN_STATUSES } from '../generated/statuses';

/** One page of a list (`nextCursor` is absent on some lists, null on the last page of others). */
export type Page<T> = { items: T[]; nextCursor?: string | null };

export type User = Schemas['UserOut'];
export type Session = Schemas['SessionOut'];

export type Problem = Schemas['Problem'];
export type Severity = Problem['severity'];
export type ValidationResult = Schemas['ValidationOut'];

type Definition = { options: WorkflowOptions | null; nodes: NodeJson[]; edges: EdgeJson[]; notes?: NoteJson[] };
/** `inputs`: the names it reads from `ctx.input` (its arguments when a `workflow` node calls it), sorted. */
export type Workflow = Omit<Schemas['WorkflowOut'], keyof Definition> & Definition;
export type WorkflowSummary = Schemas['WorkflowSummaryOut'];
export type VersionSummary = Schemas['VersionOut'];

export type SaveBody = DefinitionJson & Pick<Schemas['WorkflowSave'], 'version' | 'versionMessage'>;

export type RunAccepted = Schemas['RunAccepted'];
/** `availableAt`: a PENDING run's scheduled start; `slaBreachedAt`: when it passed options.slaSeconds unfinished. */
export type RunSummary = Schemas['RunSummary'];
export type RunCountOut = Schemas['RunCountOut'];
/** `attempt` counts every attempt of the run, `attemptInRetry` the attempt within the current retry, `retry` which
 * one; `workerId` the worker that started the latest attempt (after a takeover: the new holder). */
export type NodeState = Schemas['NodeStateOut'];
/** `parentInstanceId`/`parentNodeId`: the run and `workflow` node that started this one (its trigger is `workflow`). */
export type RunDetail = Schemas['RunDetail'];
export type RetryVersion = NonNullable<Schemas['RetryRun']['version']>;
export type RunEvent = Schemas['EventOut'];
/** `workerId`: the worker that ran this attempt; `takenOver`: another worker took the node over (its lease ran out). */
export type TimelineRow = Schemas['TimelineRowOut'];
export type RunAction = Schemas['RunActionOut'];

/** options.onFailure / options.onSlaBreach: GET /api/workflows/{id}/notifications (the secret only the first time). */
export type NotificationSettings = Schemas['NotificationSettingsOut'];
/** POST /api/workflows/{id}/notifications/test: what the receiver answered. */
export type NotificationTest = Schemas['NotificationTestOut'];

/** SPEC §6 data sources and saved queries: see data/api.ts. */

/** GET /api/examples: a workflow to start from (POST /api/examples/{id} makes it), with a sample input. */
export type Example = Schemas['ExampleOut'];

/** SPEC §8 webhook of a workflow (GET /api/workflows/{id}/webhook); `url` is a path (`/hooks/<id>`). */
export type WebhookInfo = Schemas['WebhookOut'];
/** POST /api/workflows/{id}/webhook/secret: the new secret, shown once (the old one stops working). */
export type WebhookSecret = Schemas['WebhookSecretOut'];

/** POST /api/tokens (account page). */
export type ApiToken = Schemas['TokenOut'];
/** The answer to a create: `token` is the secret, shown this once. */
export type CreatedToken = Schemas['TokenCreated'];

/** GET /api/approvals/{id}: an approval wait (docs/waits.md "Approvals"), with whether the caller may decide it. */
export type Approval = Schemas['ApprovalOut'];
export type ApprovalDecision = Schemas['ApprovalDecisionIn']['decision'];
