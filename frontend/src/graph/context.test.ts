import { describe, expect, it } from 'vitest';

import { inputContext, knownPaths, loopBodies, pathsOf, suggest } from './context';
import { edge, node } from './testing';

const nodes = [
  node('start', 'start'),
  node('score', 'python', { outputVariable: 'score' }),
  node('each', 'loop'),
  node('body', 'python'),
  node('end', 'end'),
];
const edges = [edge('start', 'score'), edge('score', 'each', 'success'), edge('each', 'body', 'loop'), edge('each', 'end', 'done')];

describe('context paths', () => {
  it('walks samples', () => {
    expect(pathsOf('ctx.score', { value: 3, tags: [{ a: 1 }], 'odd key': 1 })).toEqual([
      'ctx.score',
      'ctx.score.value',
      'ctx.score.tags',
      'ctx.score.tags[0]',
      'ctx.score.tags[0].a',
      "ctx.score['odd key']",
    ]);
  });

  it('knows upstream variables, loop variables inside a body, and sample keys', () => {
    const paths = knownPaths(nodes, edges, 'body', { input: { items: [1] }, outputs: { score: { value: 2 } } });
    expect(paths).toContain('ctx.input.items');
    expect(paths).toContain('ctx.score.value');
    expect(paths).toContain('ctx.each');
    expect(paths).toContain('ctx.loop.item');
    expect(knownPaths(nodes, edges, 'end')).not.toContain('ctx.loop.item');
    expect(knownPaths(nodes, edges, 'score')).toEqual(['ctx.input', 'ctx.start']);
  });

  it('finds loop bodies', () => {
    expect([...(loopBodies(nodes, edges).get('each') ?? [])]).toEqual(['body']);
  });

  it('suggests by the ctx fragment before the caret', () => {
    const paths = ['ctx.input', 'ctx.input.items', 'ctx.score', 'ctx.score.value'];
    expect(suggest(paths, '{{ ctx.sc')).toEqual({ token: 'ctx.sc', items: ['ctx.score', 'ctx.score.value'] });
    expect(suggest(paths, 'plain text').items).toEqual([]);
  });

  it('builds the input context a node saw', () => {
    const ctx = inputContext(nodes, edges, 'body', { input: { items: [1] }, outputs: { start: { started: true }, score: 5 } });
    expect(ctx).toEqual({ input: { items: [1] }, start: { started: true }, score: 5 });
  });
});
