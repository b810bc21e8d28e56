import { describe, expect, it } from 'vitest';

import { exportable, fileNameFor, lineAndColumn, parseWorkflowJson } from './workflowJson';

const graph = {
  title: 'Order triage',
  nodes: [
    { id: 'start', type: 'start' },
    { id: 'end', type: 'end' },
  ],
  edges: [{ id: 'e1', source: 'start', target: 'end' }],
};

describe('parseWorkflowJson', () => {
  it('reads a definition, and a whole API answer without its server fields', () => {
    expect(parseWorkflowJson(JSON.stringify(graph))).toEqual({ ok: true, definition: graph });
    const answer = { ...graph, id: 'w1', version: 4, createdAt: 1, updatedAt: 2, description: null };
    expect(parseWorkflowJson(JSON.stringify(answer))).toEqual({ ok: true, definition: { ...graph, description: null } });
  });

  it('says where the JSON is broken', () => {
    const result = parseWorkflowJson('{\n  "nodes": [,]\n}');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(/^This is not valid JSON \(at line 2, column 13\)/);
    const truncated = parseWorkflowJson('{"nodes": tru}');
    expect(truncated).toEqual({ ok: false, error: "This is not valid JSON (at line 1, column 11): Unexpected token '}'" });
  });

  it('refuses what is not a workflow, naming the field', () => {
    const error = (text: string) => {
      const result = parseWorkflowJson(text);
      return result.ok ? null : result.error;
    };
    expect(error('')).toMatch(/Nothing to import/);
    expect(error('[1, 2]')).toMatch(/not an object/);
    expect(error('{"nodes": {}}')).toMatch(/"nodes" must be a list/);
    expect(error('{"nodes": [], "edges": 3}')).toMatch(/"edges" must be a list/);
    expect(error('{"nodes": [{"id": 1, "type": "start"}]}')).toMatch(/nodes\[0\] needs a string "id"/);
    expect(error('{"nodes": [], "edges": [{"source": "a"}]}')).toMatch(/edges\[0\] needs a string "source" and "target"/);
    expect(error('{"nodes": [], "steps": []}')).toMatch(/Unknown field "steps"/);
  });
});

describe('export', () => {
  it('keeps the definition and drops what the server adds', () => {
    const answer = { ...graph, id: 'w1', version: 2, createdAt: 1, updatedAt: 2, description: null, options: { timeoutSeconds: 60 } };
    expect(exportable(answer)).toEqual({ ...graph, options: { timeoutSeconds: 60 } });
  });

  it('names the file after the title', () => {
    expect(fileNameFor('Order triage: v2!')).toBe('order-triage-v2.json');
    expect(fileNameFor('')).toBe('workflow.json');
  });

  it('counts lines and columns from 1', () => {
    expect(lineAndColumn('ab\ncd', 4)).toBe('line 2, column 2');
  });
});
