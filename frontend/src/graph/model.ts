/**
 * The editor's view of a workflow (SPEC §1, §2): one discriminated union of node types, pure data.
 *
 * React Flow nodes carry a `NodeData<T>` whose `config` is typed by the node's `type`, so narrowing on
 * `node.type` narrows the config too. Nothing in graph/ imports React.
 */
import type { Edge, Node } from '@xyflow/react';

export const NODE_TYPES = ['start', 'end', 'python', 'dataQuery', 'workflow', 'condition', 'delay', 'wait', 'loop', 'http', 'switch', 'set'] as const;
export type NodeType = (typeof NODE_TYPES)[number];

export type JoinMode = 'all' | 'any';
export type ErrorHandling = 'continue' | 'fail_workflow';

export type RetryPolicy = {
  maxAttempts: number;
  backoffSeconds: number;
  maxBackoffSeconds: number;
};

export type Branch = { id: string; label: string; expression: string };

export type StartConfig = Record<string, never>;
export type EndConfig = { outputParameters: Record<string, string> };
export type PythonConfig = { code: string };
export type DataQueryConfig = { queryId: string; args: Record<string, string> };
/** Calls another saved workflow of the tenant: `input` maps its inputs to templates; no `version` = the latest. */
export type WorkflowConfig = { workflowId: string; input: Record<string, string>; version?: number };
export type ConditionConfig = { branches: Branch[] };
export type DelayConfig = { seconds: number | string };
export type WaitFieldType = 'string' | 'number' | 'boolean' | 'select';
export type WaitField = { name: string; label?: string; type: WaitFieldType; required?: boolean; options?: string[] };
/** Stops the run until its URL is called (`webhook`) or its form is submitted (`form`); docs/waits.md. */
export type WaitConfig = {
  resumeOn: 'webhook' | 'form' | 'approval';
  timeoutSeconds?: number;
  fields?: WaitField[];
  /** approval: who may decide (emails; empty = any user of the tenant), how many approvals, self-approval. */
  approvers?: string[];
  required?: number;
  allowSelfApproval?: boolean;
};
export type LoopConfig = { items: string; concurrency?: number; maxItems?: number };
/** One HTTP request (SPEC §2 `http`): every value a template; `dataSourceId` makes `url` a path on its base URL. */
export type HttpConfig = {
  method: string;
  url: string;
  query: Record<string, unknown>;
  headers: Record<string, string>;
  body?: unknown;
  dataSourceId?: string;
  timeoutSeconds?: number;
  failOnStatus?: boolean;
};
/** A switch case: its handle and exactly one matcher (SPEC §2). */
export type SwitchCase = { handle: string; equals?: unknown; in?: unknown[]; matches?: string; expression?: string };
export type SwitchConfig = { value: string; cases: SwitchCase[] };
/** A `set` field: a (dotted) name and a template, or any JSON value. */
export type SetField = { name: string; value: unknown };
export type SetConfig = { fields: SetField[]; keepInput?: boolean };

export type ConfigByType = {
  start: StartConfig;
  end: EndConfig;
  python: PythonConfig;
  dataQuery: DataQueryConfig;
  workflow: WorkflowConfig;
  condition: ConditionConfig;
  delay: DelayConfig;
  wait: WaitConfig;
  loop: LoopConfig;
  http: HttpConfig;
  switch: SwitchConfig;
  set: SetConfig;
};

/** The fields every node may carry besides its config (SPEC §1 "common node fields"). */
export type NodeSettings = {
  label: string;
  outputVariable?: string;
  retry?: RetryPolicy;
  timeoutSeconds?: number;
  joinMode?: JoinMode;
  errorHandling?: ErrorHandling;
};

export type NodeData<T extends NodeType = NodeType> = NodeSettings & { config: ConfigByType[T] };

export type EditorNodeOf<T extends NodeType> = Node<NodeData<T>, T>;
export type EditorNode = { [T in NodeType]: EditorNodeOf<T> }[NodeType];

/** Edges store nothing beyond React Flow's own fields; `sourceHandle` is the SPEC's. */
export type EditorEdge = Edge<Record<string, never>>;

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 3, backoffSeconds: 1, maxBackoffSeconds: 60 };
export const DEFAULT_TIMEOUT_SECONDS = 30;

export type NodeTypeInfo = {
  type: NodeType;
  title: string;
  icon: string;
  color: string;
  description: string;
};

/** Palette order, titles and colours (the node components and the palette read this). */
export const NODE_TYPE_INFO: Readonly<Record<NodeType, NodeTypeInfo>> = {
  start: { type: 'start', title: 'Start', icon: '▶', color: '#16a34a', description: 'Where every run begins' },
  python: { type: 'python', title: 'Python', icon: 'λ', color: '#2563eb', description: 'Run sandboxed Python code' },
  dataQuery: { type: 'dataQuery', title: 'Data query', icon: '⛁', color: '#0891b2', description: 'Run a saved query' },
  http: { type: 'http', title: 'HTTP request', icon: '⇄', color: '#0d9488', description: 'Call a URL or an API' },
  workflow: { type: 'workflow', title: 'Run workflow', icon: '↪', color: '#db2777', description: 'Call another saved workflow' },
  condition: { type: 'condition', title: 'Condition', icon: '◇', color: '#d97706', description: 'Branch on expressions' },
  loop: { type: 'loop', title: 'Loop', icon: '↻', color: '#9333ea', description: 'Run a body once per item' },
  delay: { type: 'delay', title: 'Delay', icon: '◷', color: '#64748b', description: 'Wait, without holding a worker' },
  wait: { type: 'wait', title: 'Wait', icon: '‖', color: '#0891b2', description: 'Wait for a call, a form or an approval' },
  switch: { type: 'switch', title: 'Switch', icon: '⇉', color: '#ea580c', description: 'Route by a value: one output per case' },
  set: { type: 'set', title: 'Set fields', icon: '✎', color: '#0d9488', description: 'Build an object from named fields' },
  end: { type: 'end', title: 'End', icon: '■', color: '#dc2626', description: 'Collect the run output' },
};

export const PALETTE_ORDER: readonly NodeType[] = ['start', 'python', 'http', 'set', 'dataQuery', 'condition', 'switch', 'loop', 'workflow', 'delay', 'wait', 'end'];

export function isNodeType(value: unknown): value is NodeType {
  return typeof value === 'string' && (NODE_TYPES as readonly string[]).includes(value);
}

export function defaultConfig<T extends NodeType>(type: T): ConfigByType[T];
export function defaultConfig(type: NodeType): ConfigByType[NodeType] {
  switch (type) {
    case 'start':
      return {};
    case 'end':
      return { outputParameters: {} };
    case 'python':
      return { code: "return {'ok': True}" };
    case 'dataQuery':
      return { queryId: '', args: {} };
    case 'http':
      return { method: 'GET', url: '', query: {}, headers: {} };
    case 'workflow':
      return { workflowId: '', input: {} };
    case 'condition':
      return { branches: [{ id: 'yes', label: 'Yes', expression: 'ctx.input' }] };
    case 'delay':
      return { seconds: 1 };
    case 'wait':
      return { resumeOn: 'webhook', timeoutSeconds: 7 * 24 * 3600 };
    case 'loop':
      return { items: '{{ ctx.input.items }}', concurrency: 1 };
    case 'switch':
      return { value: '{{ ctx.input.kind }}', cases: [{ handle: 'case1', equals: 'a' }] };
    case 'set':
      return { fields: [{ name: 'field', value: '' }], keepInput: false };
  }
}

/** Build a node of `type` at `position` (the caller supplies a unique id). */
export function createNode(type: NodeType, id: string, position: { x: number; y: number }): EditorNode {
  const label = NODE_TYPE_INFO[type].title;
  return { id, type, position, data: { label, config: defaultConfig(type) } } as EditorNode;
}
