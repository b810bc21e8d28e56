import { describe, expect, it } from 'vitest';

import { idFromLabel, NODE_ID_PATTERN, newId, slugOf } from './ids';

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

  it('makes node ids from the label: snake case, unique, valid as an id and as a variable', () => {
    expect(slugOf('Count items')).toBe('count_items');
    expect(slugOf('  Résumé — parse! ')).toBe('resume_parse');
    expect(slugOf('!!!')).toBe('node');
    expect(idFromLabel('Count items', new Set(['count_items', 'count_items_2']))).toBe('count_items_3');
    expect(idFromLabel('3 retries')).toBe('n_3_retries');
    expect(idFromLabel('Loop')).toBe('loop_node');
    expect(idFromLabel('Input', new Set(['input_node']))).toBe('input_node_2');
    const long = idFromLabel('x'.repeat(200), new Set(['x'.repeat(56)]));
    expect(long).toMatch(NODE_ID_PATTERN);
    expect(long).toMatch(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/);
    expect(long.endsWith('_2')).toBe(true);
  });
});
