/**
 * The context a node's template previews resolve against: what the node saw in the last test run. Outside
 * a loop that is `inputContext` (the input and the completed upstream outputs). Inside a loop body it is
 * the body's first iteration: the body nodes' outputs of that iteration, and `ctx.loop` = {item, index: 0,
 * count}, where the items are the loop's `items` template resolved (by the server) against the loop's context.
 */
import { useEffect, useMemo, useRef, useState } from 'react';

import { ancestors } from '../../graph/connect';
import { inputContext, loopBodies, outputVariableOf } from '../../graph/context';
import type { EditorEdge, EditorNode } from '../../graph/model';
import type { RunView } from '../../runs/runReducer';
import { previewTemplate } from './previewApi';

function firstIteration(iterations: Record<string, { status: string; output: unknown }> | null | undefined) {
  const key = Object.keys(iterations ?? {}).sort((a, b) => Number.parseFloat(a) - Number.parseFloat(b))[0];
  return key === undefined ? undefined : iterations?.[key];
}

export function usePreviewContext(
  nodes: readonly EditorNode[],
  edges: readonly EditorEdge[],
  nodeId: string | null,
  run: RunView | null,
  outputs: Record<string, unknown>,
): Record<string, unknown> | null {
  const base = useMemo(
    () => (nodeId && run ? inputContext(nodes, edges, nodeId, { input: run.input, outputs }) : null),
    [nodeId, nodes, edges, run, outputs],
  );
  // The innermost loop whose body holds the node, with what its items template needs.
  const loop = useMemo(() => {
    if (!nodeId || !run) return null;
    const bodies = [...loopBodies(nodes, edges).entries()].filter(([, body]) => body.has(nodeId)).sort((a, b) => a[1].size - b[1].size);
    const found = bodies[0];
    const loopNode = found ? nodes.find((n) => n.id === found[0]) : undefined;
    if (!found || !loopNode || loopNode.type !== 'loop') return null;
    return { id: loopNode.id, items: loopNode.data.config.items, context: inputContext(nodes, edges, loopNode.id, { input: run.input, outputs }), body: found[1] };
  }, [nodeId, nodes, edges, run, outputs]);
  const [items, setItems] = useState<unknown[] | null>(null);
  // Resolve the items once per loop, items template and run (not at every edit of the graph).
  const latest = useRef(loop);
  useEffect(() => {
    latest.current = loop; // before the effect below reads it (effects run in order)
  });
  const loopKey = loop ? `${loop.id}\u0000${loop.items}` : null;

  useEffect(() => {
    setItems(null);
    const current = latest.current;
    if (!loopKey || !current) return;
    const abort = new AbortController();
    previewTemplate('template', current.items, current.context, abort.signal)
      .then((value) => setItems(Array.isArray(value) ? value : null))
      .catch(() => undefined);
    return () => abort.abort();
  }, [loopKey, run]);

  return useMemo(() => {
    if (!base || !loop || !nodeId || !run) return base;
    const ctx: Record<string, unknown> = { ...base };
    const byId = new Map(nodes.map((n) => [n.id, n]));
    for (const id of ancestors(edges, nodeId)) {
      const first = loop.body.has(id) ? firstIteration(run.nodes[id]?.iterations) : undefined;
      const node = byId.get(id);
      if (node && first?.status === 'COMPLETED') ctx[outputVariableOf(node)] = first.output;
    }
    if (items) ctx.loop = { item: items[0] ?? null, index: 0, count: items.length };
    return ctx;
  }, [base, loop, items, nodeId, run, nodes, edges]);
}
