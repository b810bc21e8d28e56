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
import { toDefinition, toFlow, type DefinitionJson, type NoteJson, type WorkflowOptions } from '../graph/convert';
import { elkLayout, type EdgeRoute } from '../graph/elkLayout';
import { sourceHandleIds, TARGET_HANDLE } from '../graph/handles';
import { emptyHistory, record, redo, undo, type History } from '../graph/history';
import { idFromLabel, newEdgeId, newId } from '../graph/ids';
import { placeNewNode } from '../graph/placement';
import { makeRoom, wireNewNode, type NodeLink } from '../graph/wiring';
import { renameVariableInNodes } from '../graph/rename';
import { createNode, type EditorEdge, type EditorNode, type NodeData, type NodeType } from '../graph/model';
import { runReducer, type RunAction, type RunView } from '../runs/runReducer';
import { dict, dictOf, withKey, withoutKey, type Dict } from '../shared/dict';

/** What undo/redo restores: the graph, its sticky notes and the workflow's own fields (title, description, options). */
export type Snapshot = { nodes: EditorNode[]; edges: EditorEdge[]; notes: NoteJson[] } & WorkflowFields;

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
  notes: NoteJson[];
  /** Edge routes of the last auto-layout (each valid while its two nodes stay put); not saved. */
  routes: Dict<EdgeRoute>;
  /** How many auto-layouts have finished (applied or dropped): shown on the editor for tests to wait on. */
  layoutsDone: number;
  history: History<Snapshot>;
  savedJson: string;
  readOnly: boolean;
  problems: Problem[];
  problemIndex: ProblemIndex;
  run: RunView | null;
  pins: Dict<unknown>;
  inspectorNodeId: string | null;
  /** The node whose details view (input, parameters, output side by side) is open, if any. */
  detailsNodeId: string | null;
  testInput: string;

  load(meta: WorkflowMeta, definition: Pick<DefinitionJson, 'nodes' | 'edges' | 'notes'>, options?: { readOnly?: boolean }): void;
  markSaved(meta: WorkflowMeta, savedJson: string): void;
  replaceGraph(definition: Pick<DefinitionJson, 'nodes' | 'edges' | 'notes'>): void;
  setTitle(title: string): void;
  /** Edit title, description or options like a node edit: one undo step (same `coalesceKey` typing folds). */
  updateWorkflow(patch: Partial<WorkflowFields>, coalesceKey?: string): void;
  definition(): DefinitionJson;
  onNodesChange(changes: NodeChange<EditorNode>[]): void;
  onEdgesChange(changes: EdgeChange<EditorEdge>[]): void;
  beginMove(): void;
  connect(connection: Connection): ConnectResult;
  addNode(type: NodeType, position: { x: number; y: number }, connectFrom?: { source: string; sourceHandle: string } | null): string;
  /** Add a node wired by `link` (after a handle, before a node, or into an edge, making room): one undo step. */
  insertNode(type: NodeType, position: { x: number; y: number }, link: NodeLink | null): { ok: true; id: string } | { ok: false; reason: string };
  /** Add by click or Enter: right of the selected node and wired to it, else at a free spot near `fallback`. */
  addNodeNext(type: NodeType, fallback: { x: number; y: number }): string;
  /** Set a node's output variable and rewrite every template, expression and code that used the old one. */
  renameVariable(nodeId: string, variable: string | undefined): void;
  /** Give a node the readable id its label makes (`count_items`), following edges, pins and references. */
  renameIdFromLabel(nodeId: string): void;
  addNote(position: { x: number; y: number }): string;
  updateNote(id: string, patch: Partial<Omit<NoteJson, 'id'>>, coalesceKey?: string): void;
  deleteNote(id: string): void;
  updateNode(id: string, patch: Partial<NodeData>, coalesceKey?: string): void;
  deleteSelection(): void;
  deleteElements(nodeIds: readonly string[], edgeIds: readonly string[]): void;
  selectedIds(): Set<string>;
  selectAll(): void;
  clearSelection(): void;
  copySelection(): Fragment | null;
  paste(fragment: Fragment, offset?: { x: number; y: number }): void;
  duplicateSelection(): void;
  layout(): Promise<void>;
  undo(): void;
  redo(): void;
  setProblems(problems: Problem[]): void;
  dispatchRun(action: RunAction): void;
  clearRun(): void;
  setPin(nodeId: string, output: unknown): void;
  removePin(nodeId: string): void;
  setPins(pins: Record<string, unknown>): void;
  openInspector(nodeId: string | null): void;
  /** Open a node's details view (it also becomes the inspected node), or close it with null. */
  openDetails(nodeId: string | null): void;
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

type DefinitionInputs = Pick<EditorState, 'nodes' | 'edges' | 'notes' | 'title' | 'description' | 'options'>;

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
    last.inputs.notes === state.notes &&
    last.inputs.title === state.title &&
    last.inputs.description === state.description &&
    last.inputs.options === state.options
  ) {
    return last.json;
  }
  const json = JSON.stringify(
    toDefinition(
      { nodes: state.nodes, edges: state.edges },
      { title: state.title, description: state.description, options: state.options, notes: state.notes },
    ),
  );
  lastDefinition = {
    inputs: { nodes: state.nodes, edges: state.edges, notes: state.notes, title: state.title, description: state.description, options: state.options },
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
      notes: state.notes,
      title: state.title,
      description: state.description,
      options: state.options,
    });
    const change = (mutate: (s: Snapshot) => Pick<Snapshot, 'nodes' | 'edges'> & { notes?: NoteJson[] }, key?: string) => {
      const state = get();
      if (state.readOnly) return;
      const before = snapshot(state);
      const after = mutate(before);
      const notes = after.notes ?? before.notes;
      if (after.nodes === before.nodes && after.edges === before.edges && notes === before.notes) return;
      set({ nodes: after.nodes, edges: after.edges, notes, history: record(state.history, before, key === undefined ? {} : { key }) });
    };
    const variables = (nodes: readonly EditorNode[]) => new Set(nodes.flatMap((n) => [n.id, n.data.outputVariable ?? n.id]));

    return {
      ...EMPTY_META,
      nodes: [],
      edges: [],
      notes: [],
      routes: dict(),
      layoutsDone: 0,
      history: emptyHistory(),
      savedJson: '',
      readOnly: false,
      problems: [],
      problemIndex: { byNode: dict(), byEdge: dict() },
      run: null,
      pins: dict(),
      inspectorNodeId: null,
      detailsNodeId: null,
      testInput: '{}',

      load(meta, definition, options = {}) {
        const flow = toFlow(definition);
        const next = { ...meta, nodes: flow.nodes, edges: flow.edges, notes: definition.notes ?? [] };
        set({
          routes: dict(),
          ...next,
          history: emptyHistory(),
          savedJson: definitionJson(next),
          readOnly: options.readOnly ?? false,
          problems: [],
          problemIndex: { byNode: dict(), byEdge: dict() },
          inspectorNodeId: null,
          detailsNodeId: null,
        });
      },

      markSaved(meta, savedJson) {
        set({ ...meta, savedJson });
      },

      replaceGraph(definition) {
        const flow = toFlow(definition);
        change(() => ({ nodes: flow.nodes, edges: flow.edges, notes: definition.notes ?? [] }));
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
        return toDefinition({ nodes: s.nodes, edges: s.edges }, { title: s.title, description: s.description, options: s.options, notes: s.notes });
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

      addNode(type, position, connectFrom = null) {
        const wired = connectFrom ? get().insertNode(type, position, { kind: 'from', ...connectFrom }) : null;
        if (wired?.ok) return wired.id;
        const placed = get().insertNode(type, position, null);
        return placed.ok ? placed.id : '';
      },

      insertNode(type, position, link) {
        const state = get();
        if (state.readOnly) return { ok: false, reason: 'This view is read-only' };
        const split = link?.kind === 'split' ? state.edges.find((e) => e.id === link.edgeId) : undefined;
        const room = split ? makeRoom(state.nodes, state.edges, split) : { position, nodes: state.nodes };
        const id = idFromLabel(createNode(type, 'x', position).data.label, variables(state.nodes));
        const node = { ...createNode(type, id, room.position), selected: true } as EditorNode;
        const wired = link ? wireNewNode(room.nodes, state.edges, node, link) : { ok: true as const, edges: state.edges };
        if (!wired.ok) return wired;
        change(() => ({ nodes: [...room.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node], edges: wired.edges }));
        set({ inspectorNodeId: id });
        return { ok: true, id };
      },

      addNodeNext(type, fallback) {
        const s = get();
        const selected = s.nodes.filter((n) => n.selected);
        const from = (s.inspectorNodeId ? nodeIndex(s.nodes).get(s.inspectorNodeId) : undefined) ?? (selected.length === 1 ? selected[0] : undefined);
        const placement = placeNewNode(s.nodes, s.edges, type, from ?? null, fallback);
        return get().addNode(type, placement.position, placement.connectFrom);
      },

      renameVariable(nodeId, variable) {
        change((s) => {
          const node = nodeIndex(s.nodes).get(nodeId);
          if (!node || (node.data.outputVariable ?? undefined) === variable) return s;
          const from = node.data.outputVariable || node.id;
          const to = variable || node.id;
          const nodes = s.nodes.map((n) => {
            if (n.id !== nodeId) return n;
            const data = { ...n.data };
            if (variable) data.outputVariable = variable;
            else delete data.outputVariable;
            return { ...n, data } as EditorNode;
          });
          return { nodes: renameVariableInNodes(nodes, from, to), edges: s.edges };
        });
      },

      renameIdFromLabel(nodeId) {
        const state = get();
        const node = nodeIndex(state.nodes).get(nodeId);
        if (!node || state.readOnly) return;
        const taken = variables(state.nodes.filter((n) => n.id !== nodeId));
        const id = idFromLabel(node.data.label, taken);
        if (id === nodeId || (node.type === 'start' && nodeId === 'start') || (node.type === 'end' && nodeId === 'end')) return;
        change((s) => {
          const moved = s.nodes.map((n) => (n.id === nodeId ? ({ ...n, id } as EditorNode) : n));
          const nodes = node.data.outputVariable ? moved : renameVariableInNodes(moved, nodeId, id);
          const edges = s.edges.map((e) =>
            e.source === nodeId || e.target === nodeId ? { ...e, source: e.source === nodeId ? id : e.source, target: e.target === nodeId ? id : e.target } : e,
          );
          return { nodes, edges };
        }, `label:${nodeId}`);
        const s = get();
        const pins = nodeId in s.pins ? Object.fromEntries(Object.entries(s.pins).map(([k, v]) => [k === nodeId ? id : k, v])) : s.pins;
        set({ pins, inspectorNodeId: s.inspectorNodeId === nodeId ? id : s.inspectorNodeId, detailsNodeId: s.detailsNodeId === nodeId ? id : s.detailsNodeId });
      },

      addNote(position) {
        const id = newId('note', new Set(get().notes.map((n) => n.id)));
        change((s) => ({ nodes: s.nodes, edges: s.edges, notes: [...s.notes, { id, text: '', position, size: { width: 220, height: 140 } }] }));
        return id;
      },

      updateNote(id, patch, coalesceKey) {
        change((s) => ({ nodes: s.nodes, edges: s.edges, notes: s.notes.map((n) => (n.id === id ? { ...n, ...patch } : n)) }), coalesceKey);
      },

      deleteNote(id) {
        change((s) => ({ nodes: s.nodes, edges: s.edges, notes: s.notes.filter((n) => n.id !== id) }));
      },

      updateNode(id, patch, coalesceKey) {
        change((s) => {
          let dropped: Set<string> = new Set();
          let renamed = new Map<string, string>();
          const nodes = s.nodes.map((n) => {
            if (n.id !== id) return n;
            const updated = { ...n, data: { ...n.data, ...patch } } as EditorNode;
            renamed = renamedHandles(n, updated);
            dropped = new Set(droppedHandles(n, updated).filter((h) => !renamed.has(h)));
            return updated;
          });
          const follow = (e: EditorEdge) => {
            const to = e.source === id ? renamed.get(e.sourceHandle ?? '') : undefined;
            return to === undefined ? e : { ...e, sourceHandle: to };
          };
          const kept = dropped.size === 0 ? s.edges : s.edges.filter((e) => !(e.source === id && dropped.has(e.sourceHandle ?? '')));
          const edges = renamed.size === 0 ? kept : kept.map(follow);
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
        const details = get().detailsNodeId;
        if (details && nodesGone.has(details)) set({ detailsNodeId: null });
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

      async layout() {
        const before = get();
        if (before.readOnly || before.nodes.length === 0) return;
        try {
          const { positions, routes } = await elkLayout(before.nodes, before.edges);
          // The graph may have changed while ELK worked: lay out only if it is the one that was measured.
          if (get().nodes !== before.nodes || get().edges !== before.edges) return;
          change((s) => ({ nodes: s.nodes.map((n) => ({ ...n, position: positions.get(n.id) ?? n.position })), edges: s.edges }));
          set({ routes });
        } finally {
          set({ layoutsDone: get().layoutsDone + 1 });
        }
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

      openDetails(nodeId) {
        set(nodeId === null ? { detailsNodeId: null } : { detailsNodeId: nodeId, inspectorNodeId: nodeId });
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

/** A switch case's output renamed in place (same case, new handle): its edges follow the new name. */
export function renamedHandles(before: EditorNode, after: EditorNode): Map<string, string> {
  const renamed = new Map<string, string>();
  if (before.type !== 'switch' || after.type !== 'switch') return renamed;
  const [was, now] = [before.data.config.cases, after.data.config.cases];
  if (was.length !== now.length) return renamed;
  const taken = new Set(was.map((c) => c.handle));
  was.forEach((c, i) => {
    const next = now[i]?.handle;
    if (next !== undefined && next !== c.handle && !taken.has(next)) renamed.set(c.handle, next);
  });
  return renamed;
}

/** Handles a condition node no longer has after an edit (their edges must go). */
export function droppedHandles(before: EditorNode, after: EditorNode): string[] {
  const kept = new Set(sourceHandleIds(after));
  return sourceHandleIds(before).filter((h) => !kept.has(h));
}
