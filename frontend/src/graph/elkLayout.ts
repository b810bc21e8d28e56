/**
 * Auto-layout with ELK (elkjs, layered, left to right): node positions plus orthogonal edge routes that
 * go around nodes, and each loop's body laid out together inside a container (the canvas draws a frame
 * around it, graph/frames.ts). elkjs is large, so it is imported on first use, in its own chunk.
 *
 * `toElkGraph` and `fromElkResult` are the pure mapping (unit-tested); `elkLayout` runs ELK between them.
 */
import type { ElkExtendedEdge, ElkNode, ElkPort } from 'elkjs/lib/elk-api';

import { loopBodies } from './context';
import { hasTargetHandle, sourceHandleIds } from './handles';
import { estimatedHeight, NODE_WIDTH } from './layout';
import type { EditorEdge, EditorNode } from './model';
import { dict, type Dict } from '../shared/dict';

export type Point = { x: number; y: number };

/** An edge's route as ELK drew it, valid while its two nodes stay where the layout put them. */
export type EdgeRoute = { points: Point[]; source: Point; target: Point };

export type LayoutResult = { positions: Map<string, Point>; routes: Dict<EdgeRoute> };

export const FRAME_PREFIX = 'frame:';

const ROOT_OPTIONS: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.direction': 'RIGHT',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.layered.spacing.nodeNodeBetweenLayers': '90',
  'elk.spacing.nodeNode': '40',
  'elk.spacing.edgeNode': '24',
  'elk.spacing.edgeEdge': '12',
  'elk.layered.spacing.edgeNodeBetweenLayers': '24',
  'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
  'elk.layered.crossingMinimization.semiInteractive': 'true',
  'elk.json.shapeCoords': 'ROOT',
  'elk.json.edgeCoords': 'ROOT',
  'elk.padding': '[top=20,left=20,bottom=20,right=20]',
};

const FRAME_OPTIONS: Record<string, string> = {
  'elk.padding': '[top=44,left=24,bottom=24,right=24]',
};

/** For each node, the loop whose body is the innermost one holding it (or none). */
export function innermostLoops(nodes: readonly EditorNode[], edges: readonly EditorEdge[]): Map<string, string> {
  const bodies = [...loopBodies(nodes, edges).entries()].sort((a, b) => a[1].size - b[1].size);
  const owner = new Map<string, string>();
  for (const node of nodes) {
    const found = bodies.find(([, body]) => body.has(node.id));
    if (found) owner.set(node.id, found[0]);
  }
  return owner;
}

function portsOf(node: EditorNode): ElkPort[] {
  const ports: ElkPort[] = [];
  if (hasTargetHandle(node.type)) ports.push({ id: `${node.id}::in`, width: 1, height: 1, layoutOptions: { 'elk.port.side': 'WEST' } });
  sourceHandleIds(node).forEach((handle, index) =>
    ports.push({ id: `${node.id}::${handle}`, width: 1, height: 1, layoutOptions: { 'elk.port.side': 'EAST', 'elk.port.index': String(index) } }),
  );
  return ports;
}

/** The ELK graph of a workflow: one ELK node per node (ports per handle), loop bodies as containers. */
export function toElkGraph(nodes: readonly EditorNode[], edges: readonly EditorEdge[]): ElkNode {
  const owner = innermostLoops(nodes, edges);
  const root: ElkNode = { id: 'root', layoutOptions: ROOT_OPTIONS, children: [], edges: [] };
  const frames = new Map<string, ElkNode>();
  const frameOf = (loopId: string): ElkNode => {
    let frame = frames.get(loopId);
    if (!frame) {
      frame = { id: `${FRAME_PREFIX}${loopId}`, layoutOptions: FRAME_OPTIONS, children: [] };
      frames.set(loopId, frame);
    }
    return frame;
  };
  const containerOf = (nodeId: string): ElkNode => {
    const loop = owner.get(nodeId);
    return loop === undefined ? root : frameOf(loop);
  };
  const ids = new Set(nodes.map((n) => n.id));
  for (const node of nodes) {
    containerOf(node.id).children?.push({
      id: node.id,
      width: node.measured?.width ?? NODE_WIDTH,
      height: estimatedHeight(node),
      ports: portsOf(node),
      layoutOptions: { 'elk.portConstraints': 'FIXED_ORDER' },
    });
  }
  // A loop's frame sits in the container of the loop node itself (loops nest).
  for (const [loopId, frame] of frames) containerOf(loopId).children?.push(frame);
  const elkEdges: ElkExtendedEdge[] = edges
    .filter((e) => ids.has(e.source) && ids.has(e.target))
    .map((e) => ({ id: e.id, sources: [`${e.source}::${e.sourceHandle ?? 'default'}`], targets: [`${e.target}::in`] }));
  root.edges = elkEdges;
  return root;
}

/** Positions of the workflow's nodes and the routes of its edges, from ELK's answer (ROOT coordinates). */
export function fromElkResult(laid: ElkNode, nodes: readonly EditorNode[]): LayoutResult {
  const wanted = new Set(nodes.map((n) => n.id));
  const positions = new Map<string, Point>();
  const stack: ElkNode[] = [...(laid.children ?? [])];
  const allEdges: ElkExtendedEdge[] = [...(laid.edges ?? [])];
  while (stack.length > 0) {
    const item = stack.pop() as ElkNode;
    if (wanted.has(item.id)) positions.set(item.id, { x: Math.round(item.x ?? 0), y: Math.round(item.y ?? 0) });
    stack.push(...(item.children ?? []));
    allEdges.push(...(item.edges ?? []));
  }
  const routes = dict<EdgeRoute>(); // keyed by edge id: null-prototype (shared/dict.ts)
  for (const edge of allEdges) {
    const section = edge.sections?.[0];
    const [source] = edge.sources[0]?.split('::') ?? [];
    const [target] = edge.targets[0]?.split('::') ?? [];
    const from = source === undefined ? undefined : positions.get(source);
    const to = target === undefined ? undefined : positions.get(target);
    if (!section || !from || !to) continue;
    const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint].map((p) => ({ x: Math.round(p.x), y: Math.round(p.y) }));
    routes[edge.id] = { points, source: from, target: to };
  }
  return { positions, routes };
}

type Elk = { layout(graph: ElkNode): Promise<ElkNode> };
let elk: Promise<Elk> | null = null;

async function loadElk(): Promise<Elk> {
  elk ??= import('elkjs/lib/elk.bundled.js').then((m) => new m.default() as unknown as Elk);
  return elk;
}

export async function elkLayout(nodes: readonly EditorNode[], edges: readonly EditorEdge[]): Promise<LayoutResult> {
  const engine = await loadElk();
  const laid = await engine.layout(toElkGraph(nodes, edges));
  return fromElkResult(laid, nodes);
}

/**
 * The SVG path of a routed edge between React Flow's handle positions: ELK's bend points, the first and
 * last moved onto the handles' rows (they sit a little off ELK's ports), with rounded corners. Also the middle point (for a label).
 */
export function routedPath(route: EdgeRoute, source: Point, target: Point, radius = 8): { path: string; mid: Point } {
  const bends = route.points.slice(1, -1);
  const points: Point[] = [source];
  if (bends.length === 0) {
    const midX = (source.x + target.x) / 2;
    points.push({ x: midX, y: source.y }, { x: midX, y: target.y });
  } else {
    // ELK's first and last segments are horizontal: move the first and last bends onto the handles' rows.
    const first = bends[0] as Point;
    const last = bends[bends.length - 1] as Point;
    const middle = bends.length >= 2 ? bends.slice(1, -1) : [];
    points.push({ x: first.x, y: source.y }, ...middle, { x: last.x, y: target.y });
  }
  points.push(target);
  let path = `M ${source.x},${source.y}`;
  for (let i = 1; i < points.length - 1; i++) {
    const prev = points[i - 1] as Point;
    const at = points[i] as Point;
    const next = points[i + 1] as Point;
    const r = Math.min(radius, Math.hypot(at.x - prev.x, at.y - prev.y) / 2, Math.hypot(next.x - at.x, next.y - at.y) / 2);
    const inX = at.x - Math.sign(at.x - prev.x) * r;
    const inY = at.y - Math.sign(at.y - prev.y) * r;
    const outX = at.x + Math.sign(next.x - at.x) * r;
    const outY = at.y + Math.sign(next.y - at.y) * r;
    path += ` L ${inX},${inY} Q ${at.x},${at.y} ${outX},${outY}`;
  }
  path += ` L ${target.x},${target.y}`;
  const mid = points[Math.floor(points.length / 2)] as Point;
  return { path, mid };
}

/** Whether a route still fits: both of its nodes are where the layout left them. */
export function routeStillFits(route: EdgeRoute, source: Point | undefined, target: Point | undefined): boolean {
  return !!source && !!target && source.x === route.source.x && source.y === route.source.y && target.x === route.target.x && target.y === route.target.y;
}
