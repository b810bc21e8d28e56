/**
 * What changed between two versions of a workflow, for the side-by-side diff: nodes added, removed and
 * changed (each changed field by path, `config.code`, `config.branches[0].expression`, `label`…), edges
 * added and removed, and the workflow's own fields (title, description, options). Moving a node is not a
 * change of what it does: positions are left out, like sticky notes.
 */
import type { DefinitionJson, EdgeJson, NodeJson } from './convert';

export type FieldChange = { path: string; before: unknown; after: unknown };
export type NodeChange = { id: string; label: string; type: string; kind: 'added' | 'removed' | 'changed'; fields: FieldChange[] };
export type VersionDiff = {
  nodes: NodeChange[];
  edgesAdded: EdgeJson[];
  edgesRemoved: EdgeJson[];
  workflow: FieldChange[];
};

const NODE_FIELDS = ['type', 'label', 'outputVariable', 'retry', 'timeoutSeconds', 'joinMode', 'errorHandling', 'config'] as const;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Leaf values by path: objects and arrays are walked, so a change names the field that changed. */
function flatten(value: unknown, path: string, into: Map<string, unknown>): void {
  if (Array.isArray(value) && value.length > 0) value.forEach((item, i) => flatten(item, `${path}[${i}]`, into));
  else if (isObject(value) && Object.keys(value).length > 0) {
    for (const [key, item] of Object.entries(value)) flatten(item, path ? `${path}.${key}` : key, into);
  } else if (value !== undefined) into.set(path, value);
}

function fieldChanges(before: Record<string, unknown>, after: Record<string, unknown>, fields: readonly string[]): FieldChange[] {
  const a = new Map<string, unknown>();
  const b = new Map<string, unknown>();
  for (const field of fields) {
    flatten(before[field], field, a);
    flatten(after[field], field, b);
  }
  const changes: FieldChange[] = [];
  for (const path of new Set([...a.keys(), ...b.keys()])) {
    const was = a.get(path);
    const is = b.get(path);
    if (JSON.stringify(was) !== JSON.stringify(is)) changes.push({ path, before: was, after: is });
  }
  return changes;
}

const edgeKey = (e: EdgeJson) => `${e.source}\u0000${e.sourceHandle ?? 'default'}\u0000${e.target}`;
const labelOf = (n: NodeJson) => n.label || n.id;

/** The changes that turn `before` into `after`. */
export function diffVersions(before: DefinitionJson, after: DefinitionJson): VersionDiff {
  const old = new Map(before.nodes.map((n) => [n.id, n]));
  const now = new Map(after.nodes.map((n) => [n.id, n]));
  const nodes: NodeChange[] = [];
  for (const n of after.nodes) {
    const was = old.get(n.id);
    if (!was) {
      nodes.push({ id: n.id, label: labelOf(n), type: n.type, kind: 'added', fields: fieldChanges({}, n as unknown as Record<string, unknown>, NODE_FIELDS) });
      continue;
    }
    const fields = fieldChanges(was as unknown as Record<string, unknown>, n as unknown as Record<string, unknown>, NODE_FIELDS);
    if (fields.length > 0) nodes.push({ id: n.id, label: labelOf(n), type: n.type, kind: 'changed', fields });
  }
  for (const n of before.nodes) {
    if (!now.has(n.id)) nodes.push({ id: n.id, label: labelOf(n), type: n.type, kind: 'removed', fields: fieldChanges(n as unknown as Record<string, unknown>, {}, NODE_FIELDS) });
  }
  const oldEdges = new Set(before.edges.map(edgeKey));
  const newEdges = new Set(after.edges.map(edgeKey));
  return {
    nodes,
    edgesAdded: after.edges.filter((e) => !oldEdges.has(edgeKey(e))),
    edgesRemoved: before.edges.filter((e) => !newEdges.has(edgeKey(e))),
    workflow: fieldChanges(before as unknown as Record<string, unknown>, after as unknown as Record<string, unknown>, ['title', 'description', 'options']),
  };
}

export function isEmptyDiff(diff: VersionDiff): boolean {
  return diff.nodes.length === 0 && diff.edgesAdded.length === 0 && diff.edgesRemoved.length === 0 && diff.workflow.length === 0;
}
