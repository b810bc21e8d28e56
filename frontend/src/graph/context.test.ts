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

  it('suggests every name right after an open {{, shallowest first, and nothing after a complete one', () => {
    const paths = ['ctx.input.items', 'ctx.input', 'ctx.score.value', 'ctx.score'];
    expect(suggest(paths, 'Hello {{ ')).toEqual({ token: '', items: ['ctx.input', 'ctx.score', 'ctx.input.items', 'ctx.score.value'] });
    expect(suggest(paths, '{{ c').token).toBe('c');
    expect(suggest(paths, '{{ ctx.score }} and {{ x').items).toEqual([]);
    expect(suggest(paths, '{{ ctx.score.value').items).toEqual([]);
    expect(suggest(paths, '{{ myctx.').items).toEqual([]);
  });

  it('knows ctx.run.resumeUrls of top-level wait nodes', () => {
    const withWait = [...nodes, node('approve', 'wait')];
    const paths = knownPaths(withWait, [...edges, edge('score', 'approve', 'success')], 'end');
    expect(paths).toContain('ctx.run.resumeUrls.approve');
    expect(knownPaths(nodes, edges, 'end')).not.toContain('ctx.run');
  });

  it('builds the input context a node saw', () => {
    const ctx = inputContext(nodes, edges, 'body', { input: { items: [1] }, outputs: { start: { started: true }, score: 5 } });
    expect(ctx).toEqual({ input: { items: [1] }, start: { started: true }, score: 5 });
  });
});
