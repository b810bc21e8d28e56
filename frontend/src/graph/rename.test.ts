import { describe, expect, it } from 'vitest';

import { renameInCode, renameInTemplate, renameVariableInNodes } from './rename';
import { node } from './testing';

describe('renaming a context variable', () => {
  it('rewrites ctx references in code, and only whole names', () => {
    expect(renameInCode("ctx.count.value > 2 and ctx.counter and ctx['count'] and ctx[\"count\"]['x'] and ctx.get('count')", 'count', 'total')).toBe(
      "ctx.total.value > 2 and ctx.counter and ctx['total'] and ctx[\"total\"]['x'] and ctx.get('total')",
    );
    expect(renameInCode('myctx.count + ctx.input.count', 'count', 'total')).toBe('myctx.count + ctx.input.count');
  });

  it('rewrites templates only between the braces', () => {
    expect(renameInTemplate('ctx.count is {{ ctx.count.value }} / {{ctx["count"]|length}}', 'count', 'total')).toBe(
      'ctx.count is {{ ctx.total.value }} / {{ctx["total"]|length}}',
    );
    expect(renameInTemplate('no template', 'count', 'total')).toBe('no template');
  });

  it("updates a switch's value template and its case expressions, and set fields' values", () => {
    const nodes = [
      node('route', 'switch', {
        config: { value: '{{ ctx.count.kind }}', cases: [{ handle: 'a', expression: 'value > ctx.count.limit' }, { handle: 'b', equals: 'ctx.count' }] },
      }),
      node('shape', 'set', { config: { fields: [{ name: 'n', value: '{{ ctx.count.value }}' }], keepInput: false } }),
    ];
    expect(renameVariableInNodes(nodes, 'count', 'total').map((n) => n.data.config)).toEqual([
      { value: '{{ ctx.total.kind }}', cases: [{ handle: 'a', expression: 'value > ctx.total.limit' }, { handle: 'b', equals: 'ctx.count' }] },
      { fields: [{ name: 'n', value: '{{ ctx.total.value }}' }], keepInput: false },
    ]);
  });

  it('updates end outputs, loop items, condition expressions and python code, and nothing else', () => {
    const nodes = [
      node('py', 'python', { config: { code: "return len(ctx['count']['items'])" } }),
      node('cond', 'condition', { config: { branches: [{ id: 'big', label: 'Big', expression: 'ctx.count.value > 10' }] } }),
      node('each', 'loop', { config: { items: '{{ ctx.count.items }}' } }),
      node('end', 'end', { config: { outputParameters: { n: '{{ ctx.count.value }}', other: '{{ ctx.input }}' } } }),
      node('untouched', 'delay', { config: { seconds: 3 } }),
    ];
    const renamed = renameVariableInNodes(nodes, 'count', 'count_items');
    expect(renamed.map((n) => n.data.config)).toEqual([
      { code: "return len(ctx['count_items']['items'])" },
      { branches: [{ id: 'big', label: 'Big', expression: 'ctx.count_items.value > 10' }] },
      { items: '{{ ctx.count_items.items }}', concurrency: 1 },
      { outputParameters: { n: '{{ ctx.count_items.value }}', other: '{{ ctx.input }}' } },
      { seconds: 3 },
    ]);
    expect(renamed[4]).toBe(nodes[4]);
    expect(renameVariableInNodes(nodes, 'nothing', 'else')).toBe(nodes);
  });
});
