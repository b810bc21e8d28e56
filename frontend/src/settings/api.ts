/** REST calls of the settings page: the tenant's retention policy (issue 22, docs/api.md). */
import { request } from '../api/client';
import type { components } from '../generated/api';

export type Retention = components['schemas']['RetentionOut'];
export type RetentionBody = components['schemas']['RetentionIn'];

export const retention = {
  get: () => request<Retention>('GET', '/api/settings/retention'),
  /** Fields as typed: the server checks them and names the one at fault. */
  put: (body: Record<keyof RetentionBody, number | string | null>) => request<Retention>('PUT', '/api/settings/retention', body),
  reset: () => request<Retention>('DELETE', '/api/settings/retention'),
};
