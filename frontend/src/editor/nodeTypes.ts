/** node type → component, edge type → component: at module scope so React Flow never sees a new object. */
import type { EdgeTypes, NodeTypes } from '@xyflow/react';

import { FlowEdge } from './edges/FlowEdge';
import { FlowNode } from './nodes/FlowNode';

export const nodeTypes: NodeTypes = {
  start: FlowNode,
  end: FlowNode,
  python: FlowNode,
  dataQuery: FlowNode,
  http: FlowNode,
  workflow: FlowNode,
  condition: FlowNode,
  delay: FlowNode,
  wait: FlowNode,
  loop: FlowNode,
  switch: FlowNode,
  set: FlowNode,
};

export const edgeTypes: EdgeTypes = { default: FlowEdge };
