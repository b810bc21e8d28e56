/** Copy and paste of a selection: a self-contained fragment that pastes into any workflow with fresh ids. */
import { edgeFromJson, edgeToJson, nodeFromJson, nodeToJson, type EdgeJson, type NodeJson } from './convert';
import { idFromLabel, newEdgeId } from './ids';
import type { EditorEdge, EditorNode } from './model';

export const CLIPBOARD_KIND = 'flowdeck/fragment@1';

export type Fragment = { kind: typeof CLIPBOARD_KIND; nodes: NodeJson[]; edges: EdgeJson[] };

export function copyFragment(nodes: readonly EditorNode[], edges: readonly EditorEdge[], ids: ReadonlySet<string>): Fragment {
  return {
    kind: CLIPBOARD_KIND,
    nodes: nodes.filter((n) => ids.has(n.id)).map(nodeToJson),
    edges: edges.filter((e) => ids.has(e.source) && ids.has(e.target)).map(edgeToJson),
  };
}

export function parseFragment(text: string | null): Fragment | null {
  if (!text) return null;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return null;
    const candidate = value as Partial<Fragment>;
    if (candidate.kind !== CLIPBOARD_KIND || !Array.isArray(candidate.nodes) || !Array.isArray(candidate.edges)) return null;
    return { kind: CLIPBOARD_KIND, nodes: candidate.nodes, edges: candidate.edges };
  } catch {
    return null;
  }
}

export type Pasted = { nodes: EditorNode[]; edges: EditorEdge[] };

/**
 * The fragment's nodes with new ids, moved by `offset`; edges inside the fragment follow.
 * An explicit output variable another node already uses is dropped (the node's own id is used instead).
 */
export function pasteFragment(
  fragment: Fragment,
  existing: { nodes: readonly EditorNode[]; edges: readonly EditorEdge[] },
  offset: { x: number; y: number },
): Pasted {
  const takenNodes = new Set(existing.nodes.map((n) => n.id));
  const takenEdges = new Set(existing.edges.map((e) => e.id));
  const variables = new Set(existing.nodes.map((n) => n.data.outputVariable ?? n.id));
  const renamed = new Map<string, string>();
  const nodes: EditorNode[] = [];
  for (const raw of fragment.nodes) {
    const id = idFromLabel(raw.label ?? raw.type, new Set([...takenNodes, ...variables]));
    takenNodes.add(id);
    renamed.set(raw.id, id);
    const position = raw.position ?? { x: 0, y: 0 };
    const copy: NodeJson = { ...raw, id, position: { x: position.x + offset.x, y: position.y + offset.y } };
    if (copy.outputVariable !== undefined && variables.has(copy.outputVariable)) delete copy.outputVariable;
    const node = nodeFromJson(copy);
    if (node) nodes.push({ ...node, selected: true });
  }
  const edges: EditorEdge[] = [];
  for (const raw of fragment.edges) {
    const source = renamed.get(raw.source);
    const target = renamed.get(raw.target);
    if (source === undefined || target === undefined) continue;
    const id = newEdgeId(takenEdges);
    takenEdges.add(id);
    edges.push(edgeFromJson({ ...raw, id, source, target }));
  }
  return { nodes, edges };
}
