import { describe, expect, it } from 'vitest';

import { filterSuggestions, resolvePath, suggestPaths, suggestRowPaths, suggestRowsPaths } from './paths';

const output = {
  orders: [
    { id: 1, name: 'Ada', total: 12.5, customer: { city: 'Paris' } },
    { id: 2, name: 'Bob', total: null, note: 'late' },
  ],
  summary: { total: 12.5, text: '# Hi' },
  tags: ['a', 'b'],
};

describe('paths', () => {
  it('resolves dotted paths with list indexes', () => {
    expect(resolvePath(output, '')).toBe(output);
    expect(resolvePath(output, 'orders.1.name')).toBe('Bob');
    expect(resolvePath(output, 'orders.0.customer.city')).toBe('Paris');
    expect(resolvePath(output, 'orders.5.name')).toBeUndefined();
    expect(resolvePath(output, 'summary.missing')).toBeUndefined();
  });
  it('walks keys and the first list item', () => {
    const paths = suggestPaths(output).map((s) => `${s.path}:${s.kind}`);
    expect(paths).toContain(':object');
    expect(paths).toContain('orders:rows');
    expect(paths).toContain('orders.0.customer.city:string');
    expect(paths).toContain('summary.total:number');
    expect(paths).toContain('tags:list');
    expect(paths).toContain('tags.0:string');
    expect(paths).not.toContain('orders.1.name:string');
  });
  it('finds lists of objects for rowsPath, including the whole value', () => {
    expect(suggestRowsPaths(output).map((s) => s.path)).toEqual(['orders']);
    expect(suggestRowsPaths([{ a: 1 }]).map((s) => s.path)).toEqual(['']);
  });
  it('unites the keys of the rows', () => {
    const paths = suggestRowPaths(output, 'orders');
    expect(paths.map((s) => s.path)).toEqual(['id', 'name', 'total', 'customer', 'customer.city', 'note']);
    expect(paths.find((s) => s.path === 'total')?.kind).toBe('number');
    expect(suggestRowPaths(output, 'summary')).toEqual([]);
  });
  it('filters by prefix first, then substring, and by kind', () => {
    const all = suggestRowPaths(output, 'orders');
    expect(filterSuggestions(all, 'n').map((s) => s.path)).toEqual(['name', 'note']);
    expect(filterSuggestions(all, 'to').map((s) => s.path)).toEqual(['total', 'customer', 'customer.city']);
    expect(filterSuggestions(all, '', ['number']).map((s) => s.path)).toEqual(['id', 'total']);
  });
});
