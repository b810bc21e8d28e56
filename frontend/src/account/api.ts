/** REST calls of the account page: API tokens (SPEC §5) and the password. */
import { request } from '../api/client';
import type { ApiToken, CreatedToken, Page } from '../api/types';

export type { ApiToken, CreatedToken };

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
