/**
 * What a node can see in `ctx` (SPEC §3): the run input, the output variables of nodes upstream of it,
 * and `ctx.loop` inside a loop body. Used for template suggestions and for a node's input context.
 */
import { dict, hasOwn, own } from '../shared/dict';
import { ancestors } from './connect';
import type { EditorEdge, EditorNode } from './model';

export function outputVariableOf(node: EditorNode): string {
  return node.data.outputVariable || node.id;
}

/** Loop id → the ids of its body (nodes reachable from its `loop` handle). */
export function loopBodies(nodes: readonly EditorNode[], edges: readonly EditorEdge[]): Map<string, Set<string>> {
  const bodies = new Map<string, Set<string>>();
  for (const loop of nodes) {
    if (loop.type !== 'loop') continue;
    const body = new Set<string>();
    const queue = edges.filter((e) => e.source === loop.id && e.sourceHandle === 'loop').map((e) => e.target);
    while (queue.length > 0) {
      const id = queue.shift() as string;
      if (body.has(id) || id === loop.id) continue;
      body.add(id);
      for (const e of edges) if (e.source === id) queue.push(e.target);
    }
    bodies.set(loop.id, body);
  }
  return bodies;
}

const MAX_DEPTH = 3;
const MAX_KEYS = 40;

/** `prefix` and the paths into `sample` (objects only; lists give `prefix[0]` once). */
export function pathsOf(prefix: string, sample: unknown, depth = 0): string[] {
  const paths = [prefix];
  if (depth >= MAX_DEPTH || sample === null || typeof sample !== 'object') return paths;
  if (Array.isArray(sample)) {
    return sample.length > 0 ? [...paths, ...pathsOf(`${prefix}[0]`, sample[0], depth + 1)] : paths;
  }
  for (const key of Object.keys(sample).slice(0, MAX_KEYS)) {
    const child = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${prefix}.${key}` : `${prefix}['${key}']`;
    paths.push(...pathsOf(child, (sample as Record<string, unknown>)[key], depth + 1));
  }
  return paths;
}

export type ContextSamples = { input?: unknown; outputs?: Readonly<Record<string, unknown>> };

/** Template paths a node may use, e.g. `ctx.input.items`, `ctx.score.value`, `ctx.loop.item`. */
export function knownPaths(
  nodes: readonly EditorNode[],
  edges: readonly EditorEdge[],
  nodeId: string,
  samples: ContextSamples = {},
): string[] {
  const paths = new Set<string>(pathsOf('ctx.input', samples.input));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const id of ancestors(edges, nodeId)) {
    const node = byId.get(id);
    if (!node || node.type === 'end') continue;
    const variable = outputVariableOf(node);
    for (const p of pathsOf(`ctx.${variable}`, own(samples.outputs, id))) paths.add(p);
  }
  const bodies = [...loopBodies(nodes, edges).values()];
  if (bodies.some((body) => body.has(nodeId))) {
    ['ctx.loop', 'ctx.loop.item', 'ctx.loop.index', 'ctx.loop.count'].forEach((p) => paths.add(p));
  }
  // `ctx.run.resumeUrls` holds the URL of every top-level wait node, known from the run's start (SPEC §2 wait).
  const waits = nodes.filter((n) => n.type === 'wait' && n.id !== nodeId && !bodies.some((body) => body.has(n.id)));
  if (waits.length > 0) {
    paths.add('ctx.run');
    paths.add('ctx.run.resumeUrls');
    for (const wait of waits) paths.add(pathsOf('ctx.run.resumeUrls', { [wait.id]: '' })[1] as string);
  }
  return [...paths];
}

/** How deep a path goes (`ctx.a` 1, `ctx.a.b[0]` 3): shallow names are offered first. */
function depth(path: string): number {
  return (path.match(/\.|\[/g) ?? []).length;
}

/** The context a node saw in a run: the input plus each completed upstream node's output. */
export function inputContext(
  nodes: readonly EditorNode[],
  edges: readonly EditorEdge[],
  nodeId: string,
  run: { input: unknown; outputs: Readonly<Record<string, unknown>> },
): Record<string, unknown> {
  const ctx = dict<unknown>([['input', run.input]]);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const id of ancestors(edges, nodeId).reverse()) {
    const node = byId.get(id);
    if (node && hasOwn(run.outputs, id)) ctx[outputVariableOf(node)] = run.outputs[id];
  }
  return ctx;
}

/**
 * Suggestions for what is typed so far: the `ctx…` fragment before the caret, matched by prefix; or, just
 * inside an open `{{ ` with nothing or the start of `ctx` typed, every path (shallowest first).
 * A fragment that is already a complete path with nothing longer to offer gives no suggestions (the list closes).
 */
export function suggest(paths: readonly string[], textBeforeCaret: string, limit = 12): { token: string; items: string[] } {
  const match = /(?:^|[^\w.])(ctx(?:\.[A-Za-z0-9_]*|\[[^\]]*\]?)*)$/.exec(textBeforeCaret);
  if (match && match[1] !== undefined) {
    const token = match[1];
    return { token, items: paths.filter((p) => p.startsWith(token) && p !== token).slice(0, limit) };
  }
  const opened = /\{\{\s*([A-Za-z_]*)$/.exec(textBeforeCaret);
  if (opened && opened[1] !== undefined && 'ctx'.startsWith(opened[1])) {
    const sorted = [...paths].sort((a, b) => depth(a) - depth(b));
    return { token: opened[1], items: sorted.slice(0, limit) };
  }
  return { token: '', items: [] };
}
