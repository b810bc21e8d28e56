import { describe, expect, it } from 'vitest';

import { starterDefinition, toDefinition, toFlow, type DefinitionJson } from './convert';

const definition: DefinitionJson = {
  title: 'Order triage',
  nodes: [
    { id: 'start', type: 'start', label: 'Start', position: { x: 0, y: 0 }, config: {} },
    {
      id: 'score',
      type: 'python',
      label: 'Score order',
      position: { x: 240, y: 0 },
      outputVariable: 'score',
      config: { code: "return {'value': 1}" },
      retry: { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 60 },
      timeoutSeconds: 30,
      errorHandling: 'fail_workflow',
    },
    {
      id: 'big',
      type: 'condition',
      label: 'Big?',
      position: { x: 480, y: 0 },
      config: { branches: [{ id: 'large', label: 'Large', expression: 'ctx.score.value > 10' }] },
    },
    { id: 'end', type: 'end', label: 'End', position: { x: 720, y: 0 }, joinMode: 'any', config: { outputParameters: { s: '{{ ctx.score.value }}' } } },
  ],
  edges: [
    { id: 'e1', source: 'start', target: 'score', sourceHandle: 'default' },
    { id: 'e2', source: 'score', target: 'big', sourceHandle: 'success' },
    { id: 'e3', source: 'big', target: 'end', sourceHandle: 'large' },
    { id: 'e4', source: 'big', target: 'end', sourceHandle: 'else' },
  ],
};

describe('convert', () => {
  it('round-trips a SPEC §1 definition', () => {
    const flow = toFlow(definition);
    expect(flow.issues).toEqual([]);
    expect(flow.nodes.map((n) => n.type)).toEqual(['start', 'python', 'condition', 'end']);
    expect(flow.edges[2]).toMatchObject({ source: 'big', target: 'end', sourceHandle: 'large', targetHandle: 'in' });
    const back = toDefinition(flow, { title: 'Order triage' });
    expect(back).toEqual(definition);
  });

  it('narrows config by node type', () => {
    const [, python] = toFlow(definition).nodes;
    if (python?.type !== 'python') throw new Error('expected python');
    expect(python.data.config.code).toContain('value');
    expect(python.data.errorHandling).toBe('fail_workflow');
  });

  it('leaves out unknown types and dangling edges, saying so', () => {
    const flow = toFlow({
      nodes: [{ id: 'x', type: 'teleport' }, { id: 'start', type: 'start' }],
      edges: [{ id: 'e', source: 'start', target: 'x' }],
    });
    expect(flow.nodes.map((n) => n.id)).toEqual(['start']);
    expect(flow.edges).toEqual([]);
    expect(flow.issues).toHaveLength(2);
  });

  it('fills in default config and a missing sourceHandle', () => {
    const flow = toFlow({ nodes: [{ id: 'e', type: 'end' }, { id: 's', type: 'start' }], edges: [{ id: 'x', source: 's', target: 'e' }] });
    const end = flow.nodes[0];
    expect(end?.type === 'end' && end.data.config.outputParameters).toEqual({});
    expect(flow.edges[0]?.sourceHandle).toBe('default');
  });

  it('starts new workflows with a valid start → end graph', () => {
    const d = starterDefinition('New');
    expect(d.nodes.map((n) => n.type)).toEqual(['start', 'end']);
    expect(d.edges).toHaveLength(1);
  });
});
