import { describe, expect, it } from 'vitest';

import { createEditorStore } from '../editor/editorStore';
import { createNode, type EditorNode } from './model';
import { edge, node } from './testing';
import { linkableTypes, wireNewNode } from './wiring';

const at = (n: EditorNode, x: number, y = 0): EditorNode => ({ ...n, position: { x, y } });

describe('wiring a new node', () => {
  const nodes = [at(node('start', 'start'), 0), at(node('check', 'condition', { config: { branches: [{ id: 'true', label: 'True', expression: 'ctx.input' }] } }), 300), at(node('end', 'end'), 600)];
  const edges = [edge('start', 'check'), edge('check', 'end', 'true', 'e-true')];

  it('splits an edge keeping the source handle, leaving the new node by its first output', () => {
    const wired = wireNewNode(nodes, edges, createNode('python', 'calc', { x: 0, y: 0 }), { kind: 'split', edgeId: 'e-true' });
    expect(wired.ok).toBe(true);
    if (!wired.ok) return;
    const view = wired.edges.map((e) => `${e.source}:${e.sourceHandle}->${e.target}`);
    expect(view).toEqual(['start:default->check', 'check:true->calc', 'calc:success->end']);
  });

  it('continues after an inserted loop by `done`, not its body', () => {
    const wired = wireNewNode(nodes, edges, createNode('loop', 'each', { x: 0, y: 0 }), { kind: 'split', edgeId: 'e-true' });
    expect(wired.ok && wired.edges.find((e) => e.source === 'each')?.sourceHandle).toBe('done');
  });

  it('wires a node dropped from an input handle into it, and refuses what cannot be wired', () => {
    const before = wireNewNode(nodes, edges, createNode('python', 'calc', { x: 0, y: 0 }), { kind: 'to', target: 'end' });
    expect(before.ok && before.edges.at(-1)).toMatchObject({ source: 'calc', sourceHandle: 'success', target: 'end' });
    expect(wireNewNode(nodes, edges, createNode('end', 'end2', { x: 0, y: 0 }), { kind: 'split', edgeId: 'e-true' })).toEqual({
      ok: false,
      reason: 'A end node has no outputs',
    });
    expect(wireNewNode(nodes, edges, createNode('python', 'c', { x: 0, y: 0 }), { kind: 'split', edgeId: 'gone' }).ok).toBe(false);
  });

  it('offers only the types that fit', () => {
    expect(linkableTypes({ kind: 'from', source: 'start', sourceHandle: 'default' }, nodes)).not.toContain('start');
    expect(linkableTypes({ kind: 'from', source: 'start', sourceHandle: 'default' }, nodes)).toContain('end');
    const between = linkableTypes({ kind: 'split', edgeId: 'e-true' }, nodes);
    expect(between).not.toContain('end');
    expect(between).not.toContain('start');
    expect(between).toContain('switch');
  });

  it('inserts between in one undo step, moving the downstream nodes right to make room', () => {
    const store = createEditorStore();
    const s = () => store.getState();
    s().load({ workflowId: 'w', version: 1, title: 'T', description: null, options: null }, {
      nodes: nodes.map((n) => ({ id: n.id, type: n.type, position: n.position, config: n.data.config })),
      edges: edges.map((e) => ({ id: e.id, source: e.source, target: e.target, sourceHandle: e.sourceHandle ?? 'default' })),
    } as never);
    const result = s().insertNode('set', { x: 0, y: 0 }, { kind: 'split', edgeId: 'e-true' });
    expect(result.ok).toBe(true);
    const id = result.ok ? result.id : '';
    const byId = new Map(s().nodes.map((n) => [n.id, n]));
    expect(byId.get(id)?.position.x).toBeGreaterThan(300);
    expect(byId.get('end')?.position.x).toBeGreaterThan(byId.get(id)?.position.x ?? Infinity);
    expect(s().edges.map((e) => `${e.source}:${e.sourceHandle}->${e.target}`)).toEqual(['start:default->check', `check:true->${id}`, `${id}:success->end`]);
    s().undo();
    expect(s().nodes.map((n) => n.id)).toEqual(['start', 'check', 'end']);
    expect(s().nodes.find((n) => n.id === 'end')?.position.x).toBe(600);
    expect(s().edges.map((e) => e.id)).toEqual(['start-check-default', 'e-true']);
  });
});
