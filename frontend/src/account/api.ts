/** REST calls of the account page: API tokens (SPEC §5) and the password. */
import { request } from '../api/client';
import type { Page } from '../api/types';

export type ApiToken = { id: string; name: string; prefix: string; createdAt: number; lastUsedAt: number | null; expiresAt: number | null };
/** The answer to a create: `token` is the secret, shown this once. */
export type CreatedToken = ApiToken & { token: string };

export const tokens = {
  list: () => request<Page<ApiToken>>('GET', '/api/tokens'),
  create: (name: string, expiresInDays: number | null) =>
    request<CreatedToken>('POST', '/api/tokens', expiresInDays === null ? { name } : { name, expiresInDays }),
  revoke: (id: string) => request<void>('DELETE', `/api/tokens/${encodeURIComponent(id)}`),
};

export const account = {
  changePassword: (currentPassword: string, newPassword: string) =>
    request<void>('POST', '/api/auth/password', { currentPassword, newPassword }),
};
