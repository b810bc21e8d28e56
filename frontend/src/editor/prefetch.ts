/**
 * Start fetching the workflow of a deep link (`/workflows/{id}`) while the app boots, in parallel with the
 * session check, instead of after it: the editor would otherwise ask only once the session is known and
 * the page has mounted (about 100 ms later on a full page load).
 *
 * Plain fetch, no error handling of its own: anything but a 200 leaves the editor to ask again through the
 * API client, which reports errors and 401s the usual way. Used once, by the first load of that workflow.
 */
import type { Workflow } from '../api/types';

const EDITOR_PATH = /^\/workflows\/([A-Za-z0-9_-]{1,64})\/?$/;
const FRESH_MS = 10_000;

let pending: { workflowId: string; at: number; answer: Promise<Workflow | null>; settled?: Workflow | null } | null = null;

export function prefetchWorkflowOfLocation(pathname: string = window.location.pathname): void {
  const match = EDITOR_PATH.exec(pathname);
  if (!match?.[1] || typeof fetch !== 'function') return;
  const workflowId = match[1];
  const answer = fetch(`/api/workflows/${encodeURIComponent(workflowId)}`, {
    headers: { Accept: 'application/json' },
    credentials: 'same-origin',
  })
    .then((response) => (response.ok ? (response.json() as Promise<Workflow>) : null))
    .catch(() => null);
  const entry: NonNullable<typeof pending> = { workflowId, at: performance.now(), answer };
  void answer.then((workflow) => (entry.settled = workflow));
  pending = entry;
}

function fresh(workflowId: string): NonNullable<typeof pending> | null {
  const p = pending;
  return p && p.workflowId === workflowId && performance.now() - p.at <= FRESH_MS ? p : null;
}

/** The prefetched workflow if it has already arrived (then it is used up), else null. */
export function takeArrivedWorkflow(workflowId: string): Workflow | null {
  const p = fresh(workflowId);
  if (!p?.settled) return null;
  pending = null;
  return p.settled;
}

/** The prefetched workflow (once), or null: not prefetched, stale, or the request failed. */
export async function takePrefetchedWorkflow(workflowId: string): Promise<Workflow | null> {
  const p = fresh(workflowId);
  if (!p) return null;
  pending = null;
  return p.answer;
}
