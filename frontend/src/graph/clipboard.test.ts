import { describe, expect, it } from 'vitest';

import { copyFragment, parseFragment, pasteFragment } from './clipboard';
import { NODE_ID_PATTERN } from './ids';
import { edge, node } from './testing';

describe('clipboard', () => {
  const nodes = [node('start', 'start'), node('a', 'python', { outputVariable: 'score' }), node('b', 'python'), node('end', 'end')];
  const edges = [edge('start', 'a'), edge('a', 'b', 'success'), edge('b', 'end', 'success')];

  it('copies the selected nodes and only the edges between them', () => {
    const fragment = copyFragment(nodes, edges, new Set(['a', 'b']));
    expect(fragment.nodes.map((n) => n.id)).toEqual(['a', 'b']);
    expect(fragment.edges.map((e) => [e.source, e.target])).toEqual([['a', 'b']]);
    expect(parseFragment(JSON.stringify(fragment))).toEqual(fragment);
  });

  it('pastes with fresh readable ids (from the label), offset positions and re-wired edges', () => {
    const fragment = copyFragment(nodes, edges, new Set(['a', 'b']));
    const pasted = pasteFragment(fragment, { nodes, edges }, { x: 40, y: 40 });
    expect(pasted.nodes).toHaveLength(2);
    const [pa, pb] = pasted.nodes;
    expect([pa?.id, pb?.id]).toEqual(['python', 'python_2']);
    expect(pa?.id).toMatch(NODE_ID_PATTERN);
    expect(pa?.position).toEqual({ x: 40, y: 40 });
    expect(pasted.edges).toHaveLength(1);
    expect(pasted.edges[0]).toMatchObject({ source: pa?.id, target: pb?.id, sourceHandle: 'success' });
    // the output variable "score" is taken in this workflow, so the copy falls back to its own id
    expect(pa?.data.outputVariable).toBeUndefined();
  });

  it('keeps an output variable that is free in the target workflow', () => {
    const fragment = copyFragment(nodes, edges, new Set(['a']));
    const pasted = pasteFragment(fragment, { nodes: [node('start', 'start')], edges: [] }, { x: 0, y: 0 });
    expect(pasted.nodes[0]?.data.outputVariable).toBe('score');
  });

  it('rejects text that is not a fragment', () => {
    expect(parseFragment('hello')).toBeNull();
    expect(parseFragment('{"kind":"other","nodes":[],"edges":[]}')).toBeNull();
    expect(parseFragment(null)).toBeNull();
  });
});
