import { describe, expect, it } from 'vitest';

import { autoLayout } from './layout';
import { edge, node } from './testing';

describe('autoLayout', () => {
  it('places nodes left to right by rank without overlaps', () => {
    const nodes = [node('start', 'start'), node('a', 'python'), node('b', 'python'), node('end', 'end')];
    const edges = [edge('start', 'a'), edge('start', 'b'), edge('a', 'end', 'success'), edge('b', 'end', 'success')];
    const pos = autoLayout(nodes, edges);
    const x = (id: string) => pos.get(id)?.x ?? Number.NaN;
    const y = (id: string) => pos.get(id)?.y ?? Number.NaN;
    expect(x('start')).toBeLessThan(x('a'));
    expect(x('a')).toBe(x('b'));
    expect(x('a')).toBeLessThan(x('end'));
    expect(Math.abs(y('a') - y('b'))).toBeGreaterThanOrEqual(72);
  });
});
