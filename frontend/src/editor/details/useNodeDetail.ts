/** `GET /api/runs/{id}/nodes/{nodeId}?iteration=&attempt=`: one node of a run, per iteration and attempt. */
import { useEffect, useState } from 'react';

import { ApiError, query, request } from '../../api/client';
import type { NodeDetailOut } from '../../generated/api';

export type NodeDetail = NodeDetailOut;

export function fetchNodeDetail(runId: string, nodeId: string, iteration: string, attempt: number | null, signal?: AbortSignal): Promise<NodeDetail> {
  const path = `/api/runs/${encodeURIComponent(runId)}/nodes/${encodeURIComponent(nodeId)}`;
  return request<NodeDetail>('GET', `${path}${query({ iteration, attempt })}`, undefined, signal);
}

export type DetailState =
  | { kind: 'none' }
  | { kind: 'loading' }
  | { kind: 'loaded'; detail: NodeDetail }
  /** The node is not in that run (added since it ran): a 404. */
  | { kind: 'absent' }
  | { kind: 'error'; message: string };

/**
 * The node's detail in the run, read again whenever `revision` changes (its status or attempt moved while
 * the run goes on). No run: nothing to read.
 */
export function useNodeDetail(runId: string | null, nodeId: string, iteration: string, attempt: number | null, revision: string): DetailState {
  const [state, setState] = useState<DetailState>({ kind: 'none' });
  useEffect(() => {
    if (!runId) {
      setState({ kind: 'none' });
      return;
    }
    const abort = new AbortController();
    setState((old) => (old.kind === 'loaded' ? old : { kind: 'loading' }));
    fetchNodeDetail(runId, nodeId, iteration, attempt, abort.signal)
      .then((detail) => setState({ kind: 'loaded', detail }))
      .catch((err: unknown) => {
        if (abort.signal.aborted) return;
        if (err instanceof ApiError && err.status === 404) setState({ kind: 'absent' });
        else setState({ kind: 'error', message: err instanceof Error ? err.message : String(err) });
      });
    return () => abort.abort();
  }, [runId, nodeId, iteration, attempt, revision]);
  return state;
}
