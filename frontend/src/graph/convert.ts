/** SPEC §1 workflow JSON ⇄ React Flow nodes and edges. Unknown fields are kept where they can be. */
import { TARGET_HANDLE } from './handles';
import {
  defaultConfig,
  isNodeType,
  NODE_TYPE_INFO,
  type EditorEdge,
  type EditorNode,
  type ErrorHandling,
  type JoinMode,
  type NodeSettings,
  type RetryPolicy,
} from './model';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export type NodeJson = {
  id: string;
  type: string;
  label?: string;
  position?: { x: number; y: number };
  config?: Record<string, unknown>;
  outputVariable?: string;
  retry?: RetryPolicy;
  timeoutSeconds?: number;
  joinMode?: JoinMode;
  errorHandling?: ErrorHandling;
};

export type EdgeJson = { id: string; source: string; target: string; sourceHandle?: string | null };

/** A sticky note on the canvas (SPEC §1 `notes`): stored with the version, never executed. */
export type NoteJson = {
  id: string;
  text: string;
  position: { x: number; y: number };
  size?: { width: number; height: number };
  color?: string;
};

export type WorkflowOptions = { timeoutSeconds?: number; slaSeconds?: number; [key: string]: unknown };

export type DefinitionJson = {
  title?: string;
  description?: string | null;
  options?: WorkflowOptions | null;
  nodes: NodeJson[];
  edges: EdgeJson[];
  notes?: NoteJson[];
};

export type FlowGraph = { nodes: EditorNode[]; edges: EditorEdge[] };
export type ConversionIssue = { nodeId?: string; edgeId?: string; message: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function settingsOf(raw: NodeJson, fallbackLabel: string): NodeSettings {
  const settings: NodeSettings = { label: raw.label ?? fallbackLabel };
  if (raw.outputVariable !== undefined) settings.outputVariable = raw.outputVariable;
  if (raw.retry !== undefined) settings.retry = raw.retry;
  if (raw.timeoutSeconds !== undefined) settings.timeoutSeconds = raw.timeoutSeconds;
  if (raw.joinMode !== undefined) settings.joinMode = raw.joinMode;
  if (raw.errorHandling !== undefined) settings.errorHandling = raw.errorHandling;
  return settings;
}

export function nodeFromJson(raw: NodeJson): EditorNode | null {
  if (!isNodeType(raw.type)) return null;
  const config = isRecord(raw.config) ? { ...defaultConfig(raw.type), ...raw.config } : defaultConfig(raw.type);
  const data = { ...settingsOf(raw, NODE_TYPE_INFO[raw.type].title), config };
  return { id: raw.id, type: raw.type, position: raw.position ?? { x: 0, y: 0 }, data } as EditorNode;
}

export function edgeFromJson(raw: EdgeJson): EditorEdge {
  return {
    id: raw.id,
    source: raw.source,
    target: raw.target,
    sourceHandle: raw.sourceHandle ?? 'default',
    targetHandle: TARGET_HANDLE,
  };
}

export function toFlow(definition: Pick<DefinitionJson, 'nodes' | 'edges'>): FlowGraph & { issues: ConversionIssue[] } {
  const issues: ConversionIssue[] = [];
  const nodes: EditorNode[] = [];
  for (const raw of definition.nodes) {
    const node = nodeFromJson(raw);
    if (node) nodes.push(node);
    else issues.push({ nodeId: raw.id, message: `unknown node type “${raw.type}” was left out` });
  }
  const ids = new Set(nodes.map((n) => n.id));
  const edges: EditorEdge[] = [];
  for (const raw of definition.edges) {
    if (ids.has(raw.source) && ids.has(raw.target)) edges.push(edgeFromJson(raw));
    else issues.push({ edgeId: raw.id, message: `edge ${raw.id} joins a missing node and was left out` });
  }
  return { nodes, edges, issues };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

export function nodeToJson(node: EditorNode): NodeJson {
  const { label, outputVariable, retry, timeoutSeconds, joinMode, errorHandling, config } = node.data;
  const out: NodeJson = {
    id: node.id,
    type: node.type,
    label,
    position: { x: round(node.position.x), y: round(node.position.y) },
    config: { ...config },
  };
  if (outputVariable) out.outputVariable = outputVariable;
  if (retry) out.retry = retry;
  if (timeoutSeconds !== undefined) out.timeoutSeconds = timeoutSeconds;
  if (joinMode) out.joinMode = joinMode;
  if (errorHandling) out.errorHandling = errorHandling;
  return out;
}

export function edgeToJson(edge: EditorEdge): EdgeJson {
  return { id: edge.id, source: edge.source, target: edge.target, sourceHandle: edge.sourceHandle ?? 'default' };
}

export function toDefinition(
  graph: FlowGraph,
  meta: { title?: string; description?: string | null; options?: WorkflowOptions | null; notes?: readonly NoteJson[] } = {},
): DefinitionJson {
  const definition: DefinitionJson = { nodes: graph.nodes.map(nodeToJson), edges: graph.edges.map(edgeToJson) };
  if (meta.notes && meta.notes.length > 0) definition.notes = meta.notes.map((n) => ({ ...n, position: { x: round(n.position.x), y: round(n.position.y) } }));
  if (meta.title !== undefined) definition.title = meta.title;
  if (meta.description) definition.description = meta.description;
  if (meta.options) definition.options = meta.options;
  return definition;
}

/** A new workflow: start → end, valid as it is. */
export function starterDefinition(title: string): DefinitionJson {
  return {
    title,
    nodes: [
      { id: 'start', type: 'start', label: 'Start', position: { x: 0, y: 0 }, config: {} },
      { id: 'end', type: 'end', label: 'End', position: { x: 320, y: 0 }, config: { outputParameters: {} } },
    ],
    edges: [{ id: 'e_start_end', source: 'start', target: 'end', sourceHandle: 'default' }],
  };
}
