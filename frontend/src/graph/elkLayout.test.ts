import { describe, expect, it } from 'vitest';

import { elkLayout, FRAME_PREFIX, routedPath, toElkGraph, type Point } from './elkLayout';
import { loopFrames } from './frames';
import { estimatedHeight, NODE_WIDTH } from './layout';
import type { EditorNode } from './model';
import { edge, node } from './testing';

type Box = { x: number; y: number; width: number; height: number };

function boxAt(n: EditorNode, p: Point): Box {
  return { x: p.x, y: p.y, width: NODE_WIDTH, height: estimatedHeight(n) };
}

/** Whether an axis-parallel segment passes through the inside of a box. */
function crosses(a: Point, b: Point, box: Box): boolean {
  const [x1, x2] = [Math.min(a.x, b.x), Math.max(a.x, b.x)];
  const [y1, y2] = [Math.min(a.y, b.y), Math.max(a.y, b.y)];
  return x1 < box.x + box.width && x2 > box.x && y1 < box.y + box.height && y2 > box.y;
}

// start -> check (condition) -yes-> wait (delay) -> end ; check -else-> end (the edge the issue saw under Delay)
const branching = {
  nodes: [
    node('start', 'start'),
    node('check', 'condition'),
    node('wait', 'delay'),
    node('end', 'end'),
  ],
  edges: [edge('start', 'check'), edge('check', 'wait', 'yes'), edge('wait', 'end'), edge('check', 'end', 'else')],
};

// start -> each (loop) -loop-> a -> b ; each -done-> end
const looping = {
  nodes: [node('start', 'start'), node('each', 'loop'), node('a', 'python'), node('b', 'python'), node('end', 'end')],
  edges: [edge('start', 'each'), edge('each', 'a', 'loop'), edge('a', 'b', 'success'), edge('each', 'end', 'done')],
};

describe('ELK layout mapping', () => {
  it('maps nodes to ELK nodes with a port per handle, and a loop body to a container', () => {
    const graph = toElkGraph(looping.nodes, looping.edges);
    const top = graph.children?.map((c) => c.id);
    expect(top).toEqual(['start', 'each', 'end', `${FRAME_PREFIX}each`]);
    const frame = graph.children?.find((c) => c.id === `${FRAME_PREFIX}each`);
    expect(frame?.children?.map((c) => c.id)).toEqual(['a', 'b']);
    const each = graph.children?.find((c) => c.id === 'each');
    expect(each?.ports?.map((p) => p.id)).toEqual(['each::in', 'each::loop', 'each::done']);
    expect(graph.edges?.find((e) => e.id === 'each-a-loop')).toMatchObject({ sources: ['each::loop'], targets: ['a::in'] });
  });

  it('lays out left to right and routes the else edge around the delay', async () => {
    const { positions, routes } = await elkLayout(branching.nodes, branching.edges);
    const at = (id: string) => positions.get(id) as Point;
    expect(at('start').x).toBeLessThan(at('check').x);
    expect(at('check').x).toBeLessThan(at('wait').x);
    expect(at('wait').x).toBeLessThan(at('end').x);
    const route = routes['check-end-else'];
    expect(route).toBeDefined();
    const wait = boxAt(branching.nodes[2] as EditorNode, at('wait'));
    const points = route?.points ?? [];
    for (let i = 1; i < points.length; i++) expect(crosses(points[i - 1] as Point, points[i] as Point, wait)).toBe(false);
  });

  it('keeps a loop body together, and its frame holds the body and nothing else', async () => {
    const { positions } = await elkLayout(looping.nodes, looping.edges);
    const laidOut = looping.nodes.map((n) => ({ ...n, position: positions.get(n.id) as Point }));
    const [frame] = loopFrames(laidOut, looping.edges);
    expect(frame?.loopId).toBe('each');
    for (const n of laidOut) {
      const inside = crosses({ x: n.position.x + 1, y: n.position.y + 1 }, { x: n.position.x + NODE_WIDTH - 1, y: n.position.y + 1 }, frame as Box);
      expect([n.id, inside]).toEqual([n.id, n.id === 'a' || n.id === 'b']);
    }
  });

  it('nests the container of an inner loop in the outer loop body, and lays it out', async () => {
    const nodes = [node('start', 'start'), node('outer', 'loop'), node('inner', 'loop'), node('work', 'python'), node('end', 'end')];
    const edges = [edge('start', 'outer'), edge('outer', 'inner', 'loop'), edge('inner', 'work', 'loop'), edge('outer', 'end', 'done')];
    const graph = toElkGraph(nodes, edges);
    const outer = graph.children?.find((c) => c.id === `${FRAME_PREFIX}outer`);
    expect(outer?.children?.map((c) => c.id)).toEqual(['inner', `${FRAME_PREFIX}inner`]);
    expect(outer?.children?.[1]?.children?.map((c) => c.id)).toEqual(['work']);
    const { positions } = await elkLayout(nodes, edges);
    expect(positions.size).toBe(5);
    const frames = loopFrames(nodes.map((n) => ({ ...n, position: positions.get(n.id) as Point })), edges);
    expect(frames.map((f) => f.loopId)).toEqual(['outer', 'inner']);
  });

  it('draws a route between the real handle positions with rounded corners', () => {
    const route = { points: [{ x: 0, y: 10 }, { x: 50, y: 10 }, { x: 50, y: 80 }, { x: 100, y: 80 }], source: { x: 0, y: 0 }, target: { x: 0, y: 0 } };
    const { path, mid } = routedPath(route, { x: 0, y: 12 }, { x: 100, y: 80 });
    expect(path.startsWith('M 0,12')).toBe(true);
    expect(path.endsWith('L 100,80')).toBe(true);
    expect(path).toContain('Q 50,12');
    expect(path).not.toContain('50,10');
    expect(mid.x).toBe(50);
  });
});
