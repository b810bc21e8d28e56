import { describe, expect, it } from 'vitest';

import { starterDefinition } from '../graph/convert';
import { createEditorStore, definitionJson } from './editorStore';

function loaded() {
  const store = createEditorStore();
  store.getState().load({ workflowId: 'w1', version: 1, title: 'T', description: null, options: null }, starterDefinition('T'));
  return store;
}

describe('editor store', () => {
  it('adds, connects and undoes/redoes each step', () => {
    const store = loaded();
    const s = () => store.getState();
    const saved = s().savedJson;
    const id = s().addNode('python', { x: 100, y: 100 });
    expect(s().nodes).toHaveLength(3);
    expect(s().connect({ source: 'start', target: id, sourceHandle: 'default', targetHandle: 'in' })).toEqual({ ok: true });
    expect(s().edges).toHaveLength(2);
    expect(definitionJson(s())).not.toBe(saved);
    s().undo();
    expect(s().edges).toHaveLength(1);
    s().undo();
    expect(s().nodes).toHaveLength(2);
    expect(definitionJson(s())).toBe(saved);
    s().redo();
    s().redo();
    expect(s().edges).toHaveLength(2);
  });

  it('refuses a cycle with the reason and changes nothing', () => {
    const store = loaded();
    const s = () => store.getState();
    const a = s().addNode('python', { x: 0, y: 0 });
    const b = s().addNode('python', { x: 0, y: 0 });
    s().connect({ source: a, target: b, sourceHandle: 'success', targetHandle: 'in' });
    const result = s().connect({ source: b, target: a, sourceHandle: 'error', targetHandle: 'in' });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toBe(`This would close a cycle: ${a} → ${b} → ${a}`);
    expect(s().edges).toHaveLength(2);
  });

  it('drops the edges of a removed condition branch, and undo brings them back', () => {
    const store = loaded();
    const s = () => store.getState();
    const c = s().addNode('condition', { x: 0, y: 0 });
    s().connect({ source: c, target: 'end', sourceHandle: 'yes', targetHandle: 'in' });
    s().connect({ source: c, target: 'end', sourceHandle: 'else', targetHandle: 'in' });
    s().updateNode(c, { config: { branches: [] } });
    expect(s().edges.filter((e) => e.source === c).map((e) => e.sourceHandle)).toEqual(['else']);
    s().undo();
    expect(s().edges.filter((e) => e.source === c)).toHaveLength(2);
  });

  it('deletes the selection with its edges, duplicates and pastes', () => {
    const store = loaded();
    const s = () => store.getState();
    s().selectAll();
    s().duplicateSelection();
    expect(s().nodes).toHaveLength(4);
    expect(s().edges).toHaveLength(2);
    expect(s().nodes.filter((n) => n.selected)).toHaveLength(2);
    s().deleteSelection();
    expect(s().nodes.map((n) => n.id)).toEqual(['start', 'end']);
    expect(s().edges).toHaveLength(1);
  });

  it('is read-only when loaded so', () => {
    const store = createEditorStore();
    store.getState().load({ workflowId: 'w', version: 2, title: '', description: null, options: null }, starterDefinition(''), {
      readOnly: true,
    });
    store.getState().addNode('python', { x: 0, y: 0 });
    store.getState().deleteElements(['start'], []);
    expect(store.getState().nodes).toHaveLength(2);
  });

  it('indexes problems by node and edge', () => {
    const store = loaded();
    store.getState().setProblems([
      { code: 'cycle', message: 'x', nodeId: 'a', edgeId: 'e1' },
      { code: 'unreachable_node', message: 'y', nodeId: 'b', severity: 'warning' },
    ]);
    expect(Object.keys(store.getState().problemIndex.byEdge)).toEqual(['e1']);
    expect(Object.keys(store.getState().problemIndex.byNode)).toEqual(['b']);
  });
});
