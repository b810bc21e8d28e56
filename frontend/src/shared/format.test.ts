import { describe, expect, it } from 'vitest';

import { formatWait } from './format';

describe('formatWait', () => {
  it('counts seconds, then minutes, hours and days', () => {
    expect(formatWait(0)).toBe('0s');
    expect(formatWait(41.2)).toBe('42s');
    expect(formatWait(185)).toBe('3m 05s');
    expect(formatWait(2 * 3600 + 4 * 60 + 59)).toBe('2h 04m');
    expect(formatWait(3 * 86400 + 2 * 3600 + 7)).toBe('3d 2h');
  });

  it('never shows a negative wait', () => {
    expect(formatWait(-5)).toBe('0s');
  });
});
