/**
 * Titles of the workflows that `workflow` nodes call, for their canvas cards: read once per id (GET
 * /api/workflows/{id}) and shared by every card; the inspector's picker fills it in as it learns titles.
 */
import { useEffect, useSyncExternalStore } from 'react';

import { workflows } from '../api/endpoints';
import { ApiError } from '../api/client';

/** A title; `null` while it is being read; `false` when the workflow does not exist (any more). */
export type TitleEntry = string | null | false;

const titles = new Map<string, TitleEntry>();
const listeners = new Set<() => void>();

function emit(): void {
  for (const listener of listeners) listener();
}

export function rememberWorkflowTitle(id: string, title: string | false): void {
  if (titles.get(id) === title) return;
  titles.set(id, title);
  emit();
}

function load(id: string): void {
  titles.set(id, null);
  workflows
    .get(id)
    .then((w) => rememberWorkflowTitle(id, w.title))
    .catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404) rememberWorkflowTitle(id, false);
      else titles.delete(id); // a network hiccup: try again on the next render that asks
    });
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The title of workflow `id` (reading it the first time it is asked for); `null` until known. */
export function useWorkflowTitle(id: string): TitleEntry {
  const entry = useSyncExternalStore(subscribe, () => (id ? titles.get(id) : undefined));
  useEffect(() => {
    if (id && !titles.has(id)) load(id);
  }, [id]);
  return entry ?? null;
}

/** Tests start from an empty cache. */
export function forgetWorkflowTitles(): void {
  titles.clear();
}
