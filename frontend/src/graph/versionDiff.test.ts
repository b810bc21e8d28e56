import { describe, expect, it } from 'vitest';

import type { DefinitionJson } from './convert';
import { diffVersions, isEmptyDiff } from './versionDiff';

const V1: DefinitionJson = {
  title: 'Orders',
  nodes: [
    { id: 'start', type: 'start', position: { x: 0, y: 0 }, config: {} },
    { id: 'score', type: 'python', label: 'Score', position: { x: 200, y: 0 }, config: { code: 'return 1' } },
    { id: 'route', type: 'condition', label: 'Route', config: { branches: [{ id: 'big', label: 'Big', expression: 'ctx.score > 1' }] } },
    { id: 'old', type: 'delay', label: 'Old wait', config: { seconds: 5 } },
  ],
  edges: [
    { id: 'e1', source: 'start', target: 'score', sourceHandle: 'default' },
    { id: 'e2', source: 'score', target: 'route', sourceHandle: 'success' },
  ],
};

describe('diffVersions', () => {
  it('names nodes added, removed and changed, each changed field by path, and the edges', () => {
    const v2: DefinitionJson = {
      title: 'Orders (EU)',
      options: { timeoutSeconds: 60 },
      nodes: [
        { id: 'start', type: 'start', position: { x: 50, y: 80 }, config: {} }, // only moved: no change
        { id: 'score', type: 'python', label: 'Score order', position: { x: 200, y: 0 }, config: { code: 'return 2' } },
        { id: 'route', type: 'condition', label: 'Route', config: { branches: [{ id: 'big', label: 'Big', expression: 'ctx.score > 10' }] } },
        { id: 'end', type: 'end', label: 'End', config: { outputParameters: { s: '{{ ctx.score }}' } } },
      ],
      edges: [
        { id: 'e1', source: 'start', target: 'score', sourceHandle: 'default' },
        { id: 'e3', source: 'route', target: 'end', sourceHandle: 'big' },
      ],
    };
    const diff = diffVersions(V1, v2);
    expect(diff.nodes.map((n) => [n.id, n.kind])).toEqual([
      ['score', 'changed'],
      ['route', 'changed'],
      ['end', 'added'],
      ['old', 'removed'],
    ]);
    expect(diff.nodes[0]?.fields).toEqual([
      { path: 'label', before: 'Score', after: 'Score order' },
      { path: 'config.code', before: 'return 1', after: 'return 2' },
    ]);
    expect(diff.nodes[1]?.fields).toEqual([{ path: 'config.branches[0].expression', before: 'ctx.score > 1', after: 'ctx.score > 10' }]);
    expect(diff.nodes[2]?.fields).toContainEqual({ path: 'config.outputParameters.s', before: undefined, after: '{{ ctx.score }}' });
    expect(diff.nodes[3]?.fields).toContainEqual({ path: 'config.seconds', before: 5, after: undefined });
    expect(diff.edgesAdded.map((e) => e.id)).toEqual(['e3']);
    expect(diff.edgesRemoved.map((e) => e.id)).toEqual(['e2']);
    expect(diff.workflow).toEqual([
      { path: 'title', before: 'Orders', after: 'Orders (EU)' },
      { path: 'options.timeoutSeconds', before: undefined, after: 60 },
    ]);
  });

  it('finds nothing between a version and itself moved around', () => {
    const moved = { ...V1, nodes: V1.nodes.map((n) => ({ ...n, position: { x: 1, y: 2 } })), edges: V1.edges.map((e) => ({ ...e, id: `x${e.id}` })) };
    expect(isEmptyDiff(diffVersions(V1, moved))).toBe(true);
  });
});
