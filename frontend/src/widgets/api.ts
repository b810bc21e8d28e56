/** The widget REST calls of the designer (docs/widgets.md), through the editor's fetch client (session + CSRF). */
import { query, request } from '../api/client';
import type { Page } from '../api/types';
import type { CreatedEmbedToken, EmbedToken, Widget, WidgetAnswer, WidgetBody, WidgetType } from './types';

const w = (id: string) => `/api/widgets/${encodeURIComponent(id)}`;

export const widgetsApi = {
  list: (workflowId: string) => request<Page<Widget>>('GET', `/api/widgets${query({ workflowId, limit: 100 })}`),
  get: (id: string) => request<Widget>('GET', w(id)),
  create: (body: WidgetBody) => request<Widget>('POST', '/api/widgets', body),
  save: (id: string, body: WidgetBody) => request<Widget>('PUT', w(id), body),
  remove: (id: string) => request<void>('DELETE', w(id)),
  data: (id: string) => request<WidgetAnswer>('GET', `${w(id)}/data`),
  /** The run's output processed for a widget: the designer's live preview. */
  preview: (runId: string, type: WidgetType, config: unknown, signal?: AbortSignal) =>
    request<WidgetAnswer>('GET', `/api/runs/${encodeURIComponent(runId)}/widget${query({ type, config: JSON.stringify(config) })}`, undefined, signal),
  tokens: (id: string) => request<Page<EmbedToken> | EmbedToken[]>('GET', `${w(id)}/embed-tokens`).then((r) => (Array.isArray(r) ? r : r.items)),
  createToken: (id: string, expiresInDays?: number) =>
    request<CreatedEmbedToken>('POST', `${w(id)}/embed-tokens`, expiresInDays ? { expiresInDays } : {}),
  revokeToken: (id: string, tokenId: string) => request<void>('DELETE', `${w(id)}/embed-tokens/${encodeURIComponent(tokenId)}`),
};
