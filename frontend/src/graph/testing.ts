/** Small graph builders for the unit tests. */
import { edgeFromJson, nodeFromJson, type NodeJson } from './convert';
import type { EditorEdge, EditorNode } from './model';

export function node(id: string, type: string, extra: Partial<NodeJson> = {}): EditorNode {
  const built = nodeFromJson({ id, type, position: { x: 0, y: 0 }, ...extra });
  if (!built) throw new Error(`bad test node type ${type}`);
  return built;
}

export function edge(source: string, target: string, sourceHandle = 'default', id = `${source}-${target}-${sourceHandle}`): EditorEdge {
  return edgeFromJson({ id, source, target, sourceHandle });
}
