/**
 * The editor's state (zustand): the graph, its undo history, validation problems, the live run and pins.
 *
 * One store per page (EditorPage, RunDetailPage), handed down by context, so the node components can read
 * their own status with narrow selectors. Graph rules come from graph/; this file only sequences them.
 */
import { applyEdgeChanges, applyNodeChanges, type Connection, type EdgeChange, type NodeChange } from '@xyflow/react';
import { createStore, type StoreApi } from 'zustand/vanilla';

import type { Problem } from '../api/types';
import { copyFragment, pasteFragment, type Fragment } from '../graph/clipboard';
import { checkConnection } from '../graph/connect';
import { toDefinition, toFlow, type DefinitionJson, type WorkflowOptions } from '../graph/convert';
import { sourceHandleIds, TARGET_HANDLE } from '../graph/handles';
import { emptyHistory, record, redo, undo, type History } from '../graph/history';
import { newEdgeId, newId } from '../graph/ids';
import { autoLayout } from '../graph/layout';
import { createNode, type EditorEdge, type EditorNode, type NodeData, type NodeType } from '../graph/model';
import { runReducer, type RunAction, type RunView } from '../runs/runReducer';
import { dict, dictOf, withKey, withoutKey, type Dict } from '../shared/dict';

/** What undo/redo restores: the graph and the workflow's own fields (title, description, options). */
export type Snapshot = { nodes: EditorNode[]; edges: EditorEdge[] } & WorkflowFields;

export type WorkflowFields = { title: string; description: string | null; options: WorkflowOptions | null };

export type WorkflowMeta = {
  workflowId: string | null;
  version: number;
  title: string;
  description: string | null;
  options: WorkflowOptions | null;
};

/** By node and edge id: null-prototype records (shared/dict), as every record keyed by an id. */
export type ProblemIndex = {
  byNode: Dict<Problem[]>;
  byEdge: Dict<Problem[]>;
};

export type ConnectResult = { ok: true } | { ok: false; reason: string };

export type EditorState = WorkflowMeta & {
  nodes: EditorNode[];
  edges: EditorEdge[];
  history: History<Snapshot>;
  savedJson: string;
  readOnly: boolean;
  problems: Problem[];
  problemIndex: ProblemIndex;
  run: RunView | null;
  pins: Dict<unknown>;
  inspectorNodeId: string | null;
  testInput: string;

  load(meta: WorkflowMeta, definition: Pick<DefinitionJson, 'nodes' | 'edges'>, options?: { readOnly?: boolean }): void;
  markSaved(meta: WorkflowMeta, savedJson: string): void;
  replaceGraph(definition: Pick<DefinitionJson, 'nodes' | 'edges'>): void;
  setTitle(title: string): void;
  /** Edit title, description or options like a node edit: one undo step (same `coalesceKey` typing folds). */
  updateWorkflow(patch: Partial<WorkflowFields>, coalesceKey?: string): void;
  definition(): DefinitionJson;
  onNodesChange(changes: NodeChange<EditorNode>[]): void;
  onEdgesChange(changes: EdgeChange<EditorEdge>[]): void;
  beginMove(): void;
  connect(connection: Connection): ConnectResult;
  addNode(type: NodeType, position: { x: number; y: number }): string;
  updateNode(id: string, patch: Partial<NodeData>, coalesceKey?: string): void;
  deleteSelection(): void;
  deleteElements(nodeIds: readonly string[], edgeIds: readonly string[]): void;
  selectedIds(): Set<string>;
  selectAll(): void;
  clearSelection(): void;
  copySelection(): Fragment | null;
  paste(fragment: Fragment, offset?: { x: number; y: number }): void;
  duplicateSelection(): void;
  layout(): void;
  undo(): void;
  redo(): void;
  setProblems(problems: Problem[]): void;
  dispatchRun(action: RunAction): void;
  clearRun(): void;
  setPin(nodeId: string, output: unknown): void;
  removePin(nodeId: string): void;
  setPins(pins: Record<string, unknown>): void;
  openInspector(nodeId: string | null): void;
  setTestInput(text: string): void;
};

export type EditorStore = StoreApi<EditorState>;

function indexProblems(problems: readonly Problem[]): ProblemIndex {
  const byNode = dict<Problem[]>();
  const byEdge = dict<Problem[]>();
  for (const p of problems) {
    if (p.edgeId) (byEdge[p.edgeId] ??= []).push(p);
    else if (p.nodeId) (byNode[p.nodeId] ??= []).push(p);
  }
  return { byNode, byEdge };
}

type DefinitionInputs = Pick<EditorState, 'nodes' | 'edges' | 'title' | 'description' | 'options'>;

let lastDefinition: { inputs: DefinitionInputs; json: string } | null = null;

/**
 * The definition as JSON (what saving sends; compared with `savedJson` for "unsaved changes").
 * Remembers the last answer by the identity of its inputs: the toolbar and the page ask on every store
 * update (a run's progress, validation, selection), and serialising 300 nodes each time cost milliseconds.
 */
export function definitionJson(state: DefinitionInputs): string {
  const last = lastDefinition;
  if (
    last &&
    last.inputs.nodes === state.nodes &&
    last.inputs.edges === state.edges &&
    last.inputs.title === state.title &&
    last.inputs.description === state.description &&
    last.inputs.options === state.options
  ) {
    return last.json;
  }
  const json = JSON.stringify(
    toDefinition(
      { nodes: state.nodes, edges: state.edges },
      { title: state.title, description: state.description, options: state.options },
    ),
  );
  lastDefinition = {
    inputs: { nodes: state.nodes, edges: state.edges, title: state.title, description: state.description, options: state.options },
    json,
  };
  return json;
}

const nodeIndexes = new WeakMap<readonly EditorNode[], Map<string, EditorNode>>();

/** id -> node for one `nodes` array (built once per array, so selectors can look a node up in O(1)). */
export function nodeIndex(nodes: readonly EditorNode[]): Map<string, EditorNode> {
  let index = nodeIndexes.get(nodes);
  if (!index) {
    index = new Map(nodes.map((n) => [n.id, n]));
    nodeIndexes.set(nodes, index);
  }
  return index;
}

const EMPTY_META: WorkflowMeta = { workflowId: null, version: 0, title: '', description: null, options: null };

export function createEditorStore(): EditorStore {
  return createStore<EditorState>()((set, get) => {
    /** Apply a graph change and remember the state before it for undo. */
    const snapshot = (state: EditorState): Snapshot => ({
      nodes: state.nodes,
      edges: state.edges,
      title: state.title,
      description: state.description,
      options: state.options,
    });
    const change = (mutate: (s: Snapshot) => Pick<Snapshot, 'nodes' | 'edges'>, key?: string) => {
      const state = get();
      if (state.readOnly) return;
      const before = snapshot(state);
      const after = mutate(before);
      if (after.nodes === before.nodes && after.edges === before.edges) return;
      set({ nodes: after.nodes, edges: after.edges, history: record(state.history, before, key === undefined ? {} : { key }) });
    };

    return {
      ...EMPTY_META,
      nodes: [],
      edges: [],
      history: emptyHistory(),
      savedJson: '',
      readOnly: false,
      problems: [],
      problemIndex: { byNode: dict(), byEdge: dict() },
      run: null,
      pins: dict(),
      inspectorNodeId: null,
      testInput: '{}',

      load(meta, definition, options = {}) {
        const flow = toFlow(definition);
        const next = { ...meta, nodes: flow.nodes, edges: flow.edges };
        set({
          ...next,
          history: emptyHistory(),
          savedJson: definitionJson(next),
          readOnly: options.readOnly ?? false,
          problems: [],
          problemIndex: { byNode: dict(), byEdge: dict() },
          inspectorNodeId: null,
        });
      },

      markSaved(meta, savedJson) {
        set({ ...meta, savedJson });
      },

      replaceGraph(definition) {
        const flow = toFlow(definition);
        change(() => ({ nodes: flow.nodes, edges: flow.edges }));
      },

      setTitle(title) {
        get().updateWorkflow({ title }, 'workflow:title');
      },

      updateWorkflow(patch, coalesceKey) {
        const state = get();
        if (state.readOnly) return;
        const changed = (Object.keys(patch) as (keyof WorkflowFields)[]).filter((k) => patch[k] !== undefined && patch[k] !== state[k]);
        if (changed.length === 0) return;
        const next: Partial<WorkflowFields> = {};
        for (const k of changed) Object.assign(next, { [k]: patch[k] });
        set({ ...next, history: record(state.history, snapshot(state), coalesceKey === undefined ? {} : { key: coalesceKey }) });
      },

      definition() {
        const s = get();
        return toDefinition({ nodes: s.nodes, edges: s.edges }, { title: s.title, description: s.description, options: s.options });
      },

      onNodesChange(changes) {
        const state = get();
        const allowed = state.readOnly
          ? changes.filter((c) => c.type === 'select' || c.type === 'dimensions')
          : changes.filter((c) => c.type !== 'remove');
        if (allowed.length === 0) return;
        const sizes = allowed.filter((c) => c.type === 'dimensions');
        if (sizes.length > 0) recordMeasuredSizes(state.nodes, sizes);
        const rest = sizes.length === allowed.length ? [] : allowed.filter((c) => c.type !== 'dimensions');
        if (rest.length > 0) set({ nodes: applyNodeChanges(rest, state.nodes) });
      },

      onEdgesChange(changes) {
        const allowed = changes.filter((c) => c.type === 'select');
        if (allowed.length === 0) return;
        set({ edges: applyEdgeChanges(allowed, get().edges) });
      },

      beginMove() {
        const state = get();
        if (state.readOnly) return;
        set({ history: record(state.history, snapshot(state)) });
      },

      connect(connection) {
        const state = get();
        if (state.readOnly) return { ok: false, reason: 'This view is read-only' };
        const check = checkConnection(state.nodes, state.edges, connection);
        if (!check.ok) return check;
        change((s) => ({
          nodes: s.nodes,
          edges: [
            ...s.edges,
            {
              id: newEdgeId(new Set(s.edges.map((e) => e.id))),
              source: connection.source,
              target: connection.target,
              sourceHandle: connection.sourceHandle ?? 'default',
              targetHandle: TARGET_HANDLE,
            },
          ],
        }));
        return { ok: true };
      },

      addNode(type, position) {
        const id = newId(type, new Set(get().nodes.map((n) => n.id)));
        const node = { ...createNode(type, id, position), selected: true } as EditorNode;
        change((s) => ({ nodes: [...s.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node], edges: s.edges }));
        set({ inspectorNodeId: id });
        return id;
      },

      updateNode(id, patch, coalesceKey) {
        change((s) => {
          let dropped: Set<string> = new Set();
          const nodes = s.nodes.map((n) => {
            if (n.id !== id) return n;
            const updated = { ...n, data: { ...n.data, ...patch } } as EditorNode;
            dropped = new Set(droppedHandles(n, updated));
            return updated;
          });
          const edges = dropped.size === 0 ? s.edges : s.edges.filter((e) => !(e.source === id && dropped.has(e.sourceHandle ?? '')));
          return { nodes, edges };
        }, coalesceKey);
      },

      deleteElements(nodeIds, edgeIds) {
        const nodesGone = new Set(nodeIds);
        const edgesGone = new Set(edgeIds);
        if (nodesGone.size === 0 && edgesGone.size === 0) return;
        change((s) => ({
          nodes: s.nodes.filter((n) => !nodesGone.has(n.id)),
          edges: s.edges.filter((e) => !edgesGone.has(e.id) && !nodesGone.has(e.source) && !nodesGone.has(e.target)),
        }));
        const inspector = get().inspectorNodeId;
        if (inspector && nodesGone.has(inspector)) set({ inspectorNodeId: null });
      },

      deleteSelection() {
        const s = get();
        get().deleteElements(
          s.nodes.filter((n) => n.selected).map((n) => n.id),
          s.edges.filter((e) => e.selected).map((e) => e.id),
        );
      },

      selectedIds() {
        return new Set(
          get()
            .nodes.filter((n) => n.selected)
            .map((n) => n.id),
        );
      },

      selectAll() {
        set((s) => ({ nodes: s.nodes.map((n) => ({ ...n, selected: true })) }));
      },

      clearSelection() {
        set((s) => ({
          nodes: s.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)),
          edges: s.edges.map((e) => (e.selected ? { ...e, selected: false } : e)),
          inspectorNodeId: null,
        }));
      },

      copySelection() {
        const s = get();
        const ids = s.selectedIds();
        return ids.size === 0 ? null : copyFragment(s.nodes, s.edges, ids);
      },

      paste(fragment, offset = { x: 40, y: 40 }) {
        change((s) => {
          const pasted = pasteFragment(fragment, s, offset);
          if (pasted.nodes.length === 0) return s;
          return {
            nodes: [...s.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), ...pasted.nodes],
            edges: [...s.edges, ...pasted.edges],
          };
        });
      },

      duplicateSelection() {
        const fragment = get().copySelection();
        if (fragment) get().paste(fragment);
      },

      layout() {
        change((s) => {
          const positions = autoLayout(s.nodes, s.edges);
          return { nodes: s.nodes.map((n) => ({ ...n, position: positions.get(n.id) ?? n.position })), edges: s.edges };
        });
      },

      undo() {
        const s = get();
        if (s.readOnly) return;
        const step = undo(s.history, snapshot(s));
        if (step) set({ ...step.present, history: step.history });
      },

      redo() {
        const s = get();
        if (s.readOnly) return;
        const step = redo(s.history, snapshot(s));
        if (step) set({ ...step.present, history: step.history });
      },

      setProblems(problems) {
        set({ problems, problemIndex: indexProblems(problems) });
      },

      dispatchRun(action) {
        set((s) => ({ run: runReducer(s.run, action) }));
      },

      clearRun() {
        set({ run: null });
      },

      setPin(nodeId, output) {
        set((s) => ({ pins: withKey(s.pins, nodeId, output) }));
      },

      removePin(nodeId) {
        set((s) => ({ pins: withoutKey(s.pins, nodeId) }));
      },

      setPins(pins) {
        set({ pins: dictOf(pins) });
      },

      openInspector(nodeId) {
        set({ inspectorNodeId: nodeId });
      },

      setTestInput(text) {
        set({ testInput: text });
      },
    };
  });
}

/**
 * React Flow's measured sizes, written onto the node objects themselves instead of into new ones.
 *
 * In a controlled React Flow the nodes we hand it must carry `measured` (else it forgets the size at the next
 * update and hides the node). Applying the changes the usual way (applyNodeChanges + set) made 300 new node
 * objects when a big graph first rendered: React Flow then re-adopted and re-rendered every node and our
 * selectors all ran again, for sizes it already knew (about a quarter of the time to open 300 nodes).
 * `measured` is React Flow's bookkeeping, not part of the workflow (toDefinition ignores it), and every copy
 * of a node (`{...node}`) carries it along, so recording it in place keeps React Flow's view and ours equal.
 */
export function recordMeasuredSizes(nodes: readonly EditorNode[], changes: readonly NodeChange<EditorNode>[]): void {
  const index = nodeIndex(nodes);
  for (const c of changes) {
    if (c.type !== 'dimensions' || !c.dimensions) continue;
    const node = index.get(c.id);
    if (!node) continue;
    node.measured = { width: c.dimensions.width, height: c.dimensions.height };
    if (c.setAttributes === true || c.setAttributes === 'width') node.width = c.dimensions.width;
    if (c.setAttributes === true || c.setAttributes === 'height') node.height = c.dimensions.height;
  }
}

/** Whether React Flow has measured every node (so fitting the view to them is meaningful). */
export function allMeasured(nodes: readonly EditorNode[]): boolean {
  return nodes.every((n) => !!n.measured?.width && !!n.measured.height);
}

/** Handles a condition node no longer has after an edit (their edges must go). */
export function droppedHandles(before: EditorNode, after: EditorNode): string[] {
  const kept = new Set(sourceHandleIds(after));
  return sourceHandleIds(before).filter((h) => !kept.has(h));
}
