import { describe, expect, it } from 'vitest';

import { starterDefinition } from '../graph/convert';
import { allMeasured, createEditorStore, definitionJson, nodeIndex } from './editorStore';

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

  it("keeps a switch case's edges when its output is renamed, and drops them when the case goes", () => {
    const store = loaded();
    const s = () => store.getState();
    const w = s().addNode('switch', { x: 0, y: 0 });
    s().connect({ source: w, target: 'end', sourceHandle: 'case1', targetHandle: 'in' });
    s().updateNode(w, { config: { value: 'x', cases: [{ handle: 'vip', equals: 'a' }] } });
    expect(s().edges.filter((e) => e.source === w).map((e) => e.sourceHandle)).toEqual(['vip']);
    s().updateNode(w, { config: { value: 'x', cases: [] } });
    expect(s().edges.filter((e) => e.source === w)).toEqual([]);
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

  it('records measured sizes on the nodes in place: no new graph, no store update, kept by later copies', () => {
    const store = loaded();
    const s = () => store.getState();
    const before = s().nodes;
    let updates = 0;
    const unsubscribe = store.subscribe(() => (updates += 1));
    expect(allMeasured(before)).toBe(false);
    s().onNodesChange([
      { type: 'dimensions', id: 'start', dimensions: { width: 200, height: 60 } },
      { type: 'dimensions', id: 'end', dimensions: { width: 210, height: 64 } },
    ]);
    unsubscribe();
    expect(updates).toBe(0);
    expect(s().nodes).toBe(before);
    expect(s().nodes.map((n) => n.measured)).toEqual([{ width: 200, height: 60 }, { width: 210, height: 64 }]);
    expect(allMeasured(s().nodes)).toBe(true);
    s().onNodesChange([{ type: 'select', id: 'start', selected: true }]);
    expect(s().nodes[0]).toMatchObject({ selected: true, measured: { width: 200, height: 60 } });
    expect(JSON.parse(definitionJson(s())).nodes[0]).not.toHaveProperty('measured');
  });

  it('answers definitionJson and nodeIndex from a cache only while their inputs are the same objects', () => {
    const store = loaded();
    const s = () => store.getState();
    const json = definitionJson(s());
    expect(definitionJson(s())).toBe(json);
    s().setTitle('Other');
    expect(definitionJson(s())).not.toBe(json);
    expect(JSON.parse(definitionJson(s())).title).toBe('Other');
    const index = nodeIndex(s().nodes);
    expect(nodeIndex(s().nodes)).toBe(index);
    expect(index.get('end')?.type).toBe('end');
    s().addNode('python', { x: 0, y: 0 });
    expect(nodeIndex(s().nodes).size).toBe(3);
  });

  it('edits title, description and options through the undo history, with the graph', () => {
    const store = loaded();
    const s = () => store.getState();
    const saved = s().savedJson;
    s().updateWorkflow({ description: 'Nightly import' }, 'workflow:description');
    s().updateWorkflow({ description: 'Nightly import of orders' }, 'workflow:description');
    expect(s().history.past).toHaveLength(1);
    const options = { timeoutSeconds: 600, schedules: [{ cron: '0 2 * * *', timezone: 'Europe/Paris' }] };
    s().updateWorkflow({ options });
    s().setTitle('Renamed');
    const id = s().addNode('python', { x: 0, y: 0 });
    expect(s().history.past).toHaveLength(4);
    const json = JSON.parse(definitionJson(s()));
    expect(json).toMatchObject({ title: 'Renamed', description: 'Nightly import of orders', options });
    expect(s().savedJson).not.toBe(definitionJson(s()));

    s().undo();
    expect(s().nodes.some((n) => n.id === id)).toBe(false);
    expect(s().title).toBe('Renamed');
    s().undo();
    expect(s().title).toBe('T');
    expect(s().options).toBe(options);
    s().undo();
    expect(s().options).toBeNull();
    s().undo();
    expect(s().description).toBeNull();
    expect(definitionJson(s())).toBe(saved);
    s().redo();
    s().redo();
    expect(s().options).toBe(options);
    expect(s().description).toBe('Nightly import of orders');
  });

  it('ignores workflow edits that change nothing, and all of them when read-only', () => {
    const store = loaded();
    const s = () => store.getState();
    s().updateWorkflow({ title: 'T', description: null });
    expect(s().history.past).toHaveLength(0);
    store.getState().load({ workflowId: 'w1', version: 1, title: 'T', description: null, options: null }, starterDefinition('T'), { readOnly: true });
    s().updateWorkflow({ title: 'X' });
    expect(s().title).toBe('T');
  });
});

describe('editor store with node ids that are Object.prototype names', () => {
  const definition = {
    nodes: [
      { id: '__proto__', type: 'start', config: {} },
      { id: 'constructor', type: 'python', config: { code: 'return 1' } },
      { id: 'toString', type: 'end', config: { outputParameters: {} } },
    ],
    edges: [
      { id: 'e1', source: '__proto__', target: 'constructor', sourceHandle: 'default' },
      { id: 'e2', source: 'constructor', target: 'toString', sourceHandle: 'success' },
    ],
  };

  it('loads, and indexes problems and pins by id', () => {
    const store = createEditorStore();
    const s = () => store.getState();
    s().load({ workflowId: 'w1', version: 1, title: 'T', description: null, options: null }, definition);
    expect(s().nodes.map((n) => n.id)).toEqual(['__proto__', 'constructor', 'toString']);
    expect(s().edges).toHaveLength(2);
    expect(s().problemIndex.byNode.constructor).toBeUndefined();

    s().setProblems([{ code: 'x', message: 'bad', nodeId: '__proto__' }]);
    expect(s().problemIndex.byNode.__proto__?.map((p) => p.message)).toEqual(['bad']);
    expect(s().problemIndex.byNode.toString).toBeUndefined();

    expect('constructor' in s().pins).toBe(false);
    s().setPin('__proto__', { pinned: true });
    s().setPin('constructor', 2);
    expect(Object.keys(s().pins).sort()).toEqual(['__proto__', 'constructor']);
    s().removePin('__proto__');
    expect(Object.keys(s().pins)).toEqual(['constructor']);
    s().setPins(JSON.parse('{"__proto__": 1}') as Record<string, unknown>);
    expect(s().pins.__proto__).toBe(1);

  });
});

describe('editor store: issue 13 conveniences', () => {
  it('adds a node right of the selected one, wired to it, with a readable id', () => {
    const store = loaded();
    const s = () => store.getState();
    s().openInspector('start');
    s().deleteElements([], s().edges.map((e) => e.id));
    const id = s().addNodeNext('python', { x: 0, y: 0 });
    expect(id).toBe('python');
    expect(s().edges).toEqual([expect.objectContaining({ source: 'start', target: 'python', sourceHandle: 'default' })]);
    const next = s().addNodeNext('python', { x: 0, y: 0 });
    expect(next).toBe('python_2');
    expect(s().edges.find((e) => e.target === 'python_2')).toMatchObject({ source: 'python', sourceHandle: 'success' });
    s().undo();
    expect(s().nodes.map((n) => n.id)).not.toContain('python_2');
    expect(s().edges.some((e) => e.target === 'python_2')).toBe(false);
  });

  it('renames an output variable in the templates that use it, in one undo step', () => {
    const store = loaded();
    const s = () => store.getState();
    const py = s().addNode('python', { x: 0, y: 0 });
    s().updateNode('end', { config: { outputParameters: { n: `{{ ctx.${py}.value }}` } } });
    s().renameVariable(py, 'count');
    expect(s().nodes.find((n) => n.id === 'end')?.data.config).toEqual({ outputParameters: { n: '{{ ctx.count.value }}' } });
    s().renameVariable(py, 'total');
    expect(s().nodes.find((n) => n.id === 'end')?.data.config).toEqual({ outputParameters: { n: '{{ ctx.total.value }}' } });
    s().undo();
    expect(s().nodes.find((n) => n.id === 'end')?.data.config).toEqual({ outputParameters: { n: '{{ ctx.count.value }}' } });
    expect(s().nodes.find((n) => n.id === py)?.data.outputVariable).toBe('count');
  });

  it('gives a relabelled node the id its label makes, following edges and references', () => {
    const store = loaded();
    const s = () => store.getState();
    const py = s().addNode('python', { x: 0, y: 0 });
    s().connect({ source: 'start', target: py, sourceHandle: 'default', targetHandle: 'in' });
    s().updateNode('end', { config: { outputParameters: { n: `{{ ctx.${py}.value }}` } } });
    s().updateNode(py, { label: 'Count items' }, `label:${py}`);
    s().renameIdFromLabel(py);
    expect(s().nodes.map((n) => n.id)).toContain('count_items');
    expect(s().edges.find((e) => e.source === 'start' && e.target === 'count_items')).toBeDefined();
    expect(s().nodes.find((n) => n.id === 'end')?.data.config).toEqual({ outputParameters: { n: '{{ ctx.count_items.value }}' } });
    expect(s().inspectorNodeId).toBe('count_items');
  });

  it('keeps sticky notes in the definition, with undo', () => {
    const store = loaded();
    const s = () => store.getState();
    const id = s().addNote({ x: 10, y: 20 });
    s().updateNote(id, { text: 'h' }, `note-text:${id}`);
    s().updateNote(id, { text: 'hi' }, `note-text:${id}`);
    expect(s().definition().notes).toEqual([{ id, text: 'hi', position: { x: 10, y: 20 }, size: { width: 220, height: 140 } }]);
    s().undo();
    expect(s().notes[0]?.text).toBe('');
    s().deleteNote(id);
    expect(s().definition().notes).toBeUndefined();
    s().undo();
    expect(s().notes).toHaveLength(1);
  });
});
