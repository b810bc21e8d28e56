import { describe, expect, it } from 'vitest';

import { countText } from './RunHistoryPage';

describe('run count', () => {
  it('is exact below the cap and says "+" past it', () => {
    expect(countText({ count: 1, more: false })).toBe('1 run');
    expect(countText({ count: 1234, more: false })).toBe('1,234 runs');
    expect(countText({ count: 10000, more: true })).toBe('10,000+ runs');
    expect(countText({ count: 0, more: false })).toBe('0 runs');
  });
});
