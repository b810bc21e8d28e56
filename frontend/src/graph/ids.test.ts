import { describe, expect, it } from 'vitest';

import { NODE_ID_PATTERN, newId } from './ids';

describe('ids', () => {
  it('makes readable ids within the SPEC pattern', () => {
    const id = newId('dataQuery');
    expect(id).toMatch(/^dataQuery_[0-9a-f]{6}$/);
    expect(newId('we!rd prefix')).toMatch(NODE_ID_PATTERN);
  });

  it('avoids taken ids', () => {
    const taken = new Set<string>();
    for (let i = 0; i < 200; i++) taken.add(newId('n', taken));
    expect(taken.size).toBe(200);
  });
});
