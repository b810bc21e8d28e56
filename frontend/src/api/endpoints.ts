/** One typed function per REST endpoint the editor uses (SPEC §5). */
import type { DefinitionJson } from '../graph/convert';
import { query, request, setCsrfToken } from './client';
import type {
  Approval,
  ApprovalDecision,
  Example,
  Page,
  RunAccepted,
  RunAction,
  RetryVersion,
  RunDetail,
  RunEvent,
  RunStatus,
  RunCountOut,
  RunSummary,
  SaveBody,
  Session,
  TimelineRow,
  ValidationResult,
  VersionSummary,
  NotificationSettings,
  NotificationTest,
  WebhookInfo,
  WebhookSecret,
  Workflow,
  WorkflowSummary,
} from './types';

export const auth = {
  async login(email: string, password: string): Promise<Session> {
    const session = await request<Session>('POST', '/api/auth/login', { email, password });
    setCsrfToken(session.csrfToken);
    return session;
  },
  async me(): Promise<Session> {
    const session = await request<Session>('GET', '/api/auth/me');
    setCsrfToken(session.csrfToken);
    return session;
  },
  async logout(): Promise<void> {
    await request<void>('POST', '/api/auth/logout');
    setCsrfToken(null);
  },
};

export const workflows = {
  list: (cursor?: string | null) => request<Page<WorkflowSummary>>('GET', `/api/workflows${query({ cursor, limit: 100 })}`),
  /** Workflows whose title contains `q` (case-insensitive); an empty `q` lists them all. */
  search: (q: string, signal?: AbortSignal) =>
    request<Page<WorkflowSummary>>('GET', `/api/workflows${query({ q: q || undefined, limit: 50 })}`, undefined, signal),
  get: (id: string) => request<Workflow>('GET', `/api/workflows/${encodeURIComponent(id)}`),
  create: (definition: DefinitionJson) => request<Workflow>('POST', '/api/workflows', definition),
  save: (id: string, body: SaveBody) => request<Workflow>('PUT', `/api/workflows/${encodeURIComponent(id)}`, body),
  remove: (id: string) => request<void>('DELETE', `/api/workflows/${encodeURIComponent(id)}`),
  versions: (id: string) => request<Page<VersionSummary>>('GET', `/api/workflows/${encodeURIComponent(id)}/versions${query({ limit: 100 })}`),
  version: (id: string, version: number) => request<Workflow>('GET', `/api/workflows/${encodeURIComponent(id)}/versions/${version}`),
  /** Save an old version again as the next one (the history only grows). */
  restore: (id: string, version: number) => request<Workflow>('POST', `/api/workflows/${encodeURIComponent(id)}/versions/${version}/restore`),
  /** `workflowId`: the saved workflow this is an edit of, so a node calling it is flagged (`calls_itself`). */
  validate: (definition: DefinitionJson, signal?: AbortSignal, workflowId?: string | null) =>
    request<ValidationResult>('POST', `/api/workflows/validate${query({ workflowId })}`, definition, signal),
  execute: (id: string, input: unknown, priority?: number) =>
    request<RunAccepted>('POST', `/api/workflows/${encodeURIComponent(id)}/runs`, priority === undefined ? { input } : { input, priority }),
};

export const webhooks = {
  get: (workflowId: string) => request<WebhookInfo>('GET', `/api/workflows/${encodeURIComponent(workflowId)}/webhook`),
  /** Make (or replace) the secret: the answer is the only time it is shown. */
  rotateSecret: (workflowId: string) => request<WebhookSecret>('POST', `/api/workflows/${encodeURIComponent(workflowId)}/webhook/secret`),
};

export const examples = {
  list: () => request<{ items: Example[] }>('GET', '/api/examples'),
  /** A new workflow of the tenant made from the example. */
  start: (id: string) => request<Workflow>('POST', `/api/examples/${encodeURIComponent(id)}`),
};

export const notifications = {
  /** The signing secret's state; `secret` only the first time it is read after it was made. */
  get: (workflowId: string) => request<NotificationSettings>('GET', `/api/workflows/${encodeURIComponent(workflowId)}/notifications`),
  rotateSecret: (workflowId: string) =>
    request<{ secret: string }>('POST', `/api/workflows/${encodeURIComponent(workflowId)}/notifications/secret`),
  /** POST a signed sample payload to `url` (default: the saved one) and report the receiver's answer. */
  test: (workflowId: string, url?: string) =>
    request<NotificationTest>('POST', `/api/workflows/${encodeURIComponent(workflowId)}/notifications/test`, url ? { url } : {}),
};

/** `workflowId`: the saved workflow the editor is on, so that its run history lists the test run. */
export type TestRunBody = DefinitionJson & { input: unknown; pinned?: Record<string, unknown>; workflowId?: string };

export type RunFilters = {
  workflowId?: string;
  status?: RunStatus | '';
  isTest?: boolean | null;
  cursor?: string | null;
  /** Created at or after / before (epoch seconds). */
  from?: number | null;
  to?: number | null;
  /** Runs whose id starts with this. */
  idPrefix?: string;
  /** Runs carrying every one of these labels (`label.<name>=<value>`). */
  labels?: Record<string, string>;
  /** How the runs started (`editor`, `api`, `webhook`, …). */
  trigger?: string;
  limit?: number;
};

function filterParams(filters: RunFilters) {
  return {
    workflowId: filters.workflowId,
    status: filters.status,
    isTest: filters.isTest,
    from: filters.from,
    to: filters.to,
    idPrefix: filters.idPrefix,
    trigger: filters.trigger,
    ...Object.fromEntries(Object.entries(filters.labels ?? {}).map(([name, value]) => [`label.${name}`, value])),
  };
}

export const runs = {
  startTest: (body: TestRunBody) => request<RunAccepted>('POST', '/api/test-runs', body),
  deleteTest: (id: string) => request<void>('DELETE', `/api/test-runs/${encodeURIComponent(id)}`),
  list: (filters: RunFilters) =>
    request<Page<RunSummary>>('GET', `/api/runs${query({ ...filterParams(filters), cursor: filters.cursor, limit: filters.limit ?? 50 })}`),
  /** How many runs match: exact up to 10,000, then `more` (shown as "10,000+"). */
  count: (filters: RunFilters) => request<RunCountOut>('GET', `/api/runs/count${query(filterParams(filters))}`),
  get: (id: string) => request<RunDetail>('GET', `/api/runs/${encodeURIComponent(id)}`),
  events: (id: string, cursor?: string | null) =>
    request<Page<RunEvent>>('GET', `/api/runs/${encodeURIComponent(id)}/events${query({ cursor, limit: 200 })}`),
  timeline: (id: string) => request<Page<TimelineRow>>('GET', `/api/runs/${encodeURIComponent(id)}/timeline`),
  cancel: (id: string) => request<RunAction>('POST', `/api/runs/${encodeURIComponent(id)}/cancel`),
  retry: (id: string, version: RetryVersion = 'original') =>
    request<RunAction>('POST', `/api/runs/${encodeURIComponent(id)}/retry`, { version }),
};

export const approvals = {
  /** The pending approvals the signed-in user may decide, oldest first (a page of up to 200). */
  list: (cursor?: string | null) => request<Page<Approval>>('GET', `/api/approvals${query({ cursor, limit: 200 })}`),
  get: (id: string) => request<Approval>('GET', `/api/approvals/${encodeURIComponent(id)}`),
  decide: (id: string, decision: ApprovalDecision, comment?: string) =>
    request<Approval>('POST', `/api/approvals/${encodeURIComponent(id)}`, comment ? { decision, comment } : { decision }),
};
