import { describe, expect, it } from 'vitest';

import { resolveTheme } from './theme';

describe('theme', () => {
  it('follows the system unless a theme was picked', () => {
    expect(resolveTheme('system', true)).toBe('dark');
    expect(resolveTheme('system', false)).toBe('light');
    expect(resolveTheme('light', true)).toBe('light');
    expect(resolveTheme('dark', false)).toBe('dark');
  });
});
