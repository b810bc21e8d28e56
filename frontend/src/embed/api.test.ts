import { describe, expect, it } from 'vitest';

import { tokenFromPath } from './api';

describe('tokenFromPath', () => {
  it('reads the token from /embed/<token>', () => {
    expect(tokenFromPath('/embed/fde_abc123')).toBe('fde_abc123');
    expect(tokenFromPath('/embed/fde_abc123/')).toBe('fde_abc123');
    expect(tokenFromPath('/embed/fde_a%2Db')).toBe('fde_a-b');
    expect(tokenFromPath('/embed/')).toBeNull();
    expect(tokenFromPath('/workflows/x')).toBeNull();
  });
});
