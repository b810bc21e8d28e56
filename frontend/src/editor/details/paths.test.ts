import { describe, expect, it } from 'vitest';

import { cellText, childPath, insertPath, orderedKeys, subscriptPath, tableOf } from './paths';

describe('paths into the context', () => {
  it('extends a path the way templates write it', () => {
    expect(childPath('ctx', 'loop')).toBe('ctx.loop');
    expect(childPath('ctx.rows', 0)).toBe('ctx.rows[0]');
    expect(childPath('ctx.input', 'order id')).toBe("ctx.input['order id']");
  });

  it('writes the subscript form code reads', () => {
    expect(subscriptPath('ctx.loop.item')).toBe("ctx['loop']['item']");
    expect(subscriptPath('ctx.rows[0].id')).toBe("ctx['rows'][0]['id']");
  });

  it('inserts a template, or a bare path inside braces and in expressions', () => {
    expect(insertPath('Hello ', 6, 'ctx.input.name', 'template')).toEqual({ value: 'Hello {{ ctx.input.name }}', caret: 26 });
    expect(insertPath('{{  }}', 3, 'ctx.loop.item', 'template').value).toBe('{{ ctx.loop.item }}');
    expect(insertPath('x > ', 4, 'ctx.score', 'expression').value).toBe('x > ctx.score');
    expect(insertPath('{{ a }} and ', 12, 'ctx.b', 'template').value).toBe('{{ a }} and {{ ctx.b }}');
  });
});

describe('tables of data', () => {
  it('draws a list of records with a column per key', () => {
    const table = tableOf([{ id: 1, name: 'a' }, { id: 2, tag: 'x' }], 'ctx.rows');
    expect(table?.columns).toEqual(['id', 'name', 'tag']);
    expect(table?.rows.map((r) => r.cells)).toEqual([
      [1, 'a', undefined],
      [2, undefined, 'x'],
    ]);
    expect(table?.rows[1]?.path('tag')).toBe('ctx.rows[1].tag');
  });

  it('draws an object as key/value rows and a scalar as no table', () => {
    const table = tableOf({ item: 'pear', index: 1 }, 'ctx.loop');
    expect(table?.rows.map((r) => [r.key, r.cells[0], r.path('value')])).toEqual([
      ['item', 'pear', 'ctx.loop.item'],
      ['index', 1, 'ctx.loop.index'],
    ]);
    expect(tableOf(42, 'ctx.x')).toBeNull();
  });

  it('shows cells on one line and orders read keys first', () => {
    expect(cellText({ a: 1 })).toBe('{"a":1}');
    expect(cellText('x'.repeat(200), 10)).toHaveLength(10);
    expect(orderedKeys({ input: 1, start: 2, loop: 3 }, ['loop'])).toEqual(['loop', 'input', 'start']);
    expect(orderedKeys({ input: 1 }, null)).toEqual(['input']);
  });
});
