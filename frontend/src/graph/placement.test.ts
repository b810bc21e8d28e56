import { describe, expect, it } from 'vitest';

import { firstFreeHandle, freeSpot, placeNewNode } from './placement';
import { edge, node } from './testing';

const at = (id: string, type: string, x: number, y: number) => ({ ...node(id, type), position: { x, y } });

describe('placing a node added by click', () => {
  it('goes right of the selected node, wired to its first free handle', () => {
    const py = at('py', 'python', 0, 0);
    const edges = [edge('py', 'x', 'success')];
    expect(firstFreeHandle(py, edges)).toBe('error');
    const placed = placeNewNode([py], edges, 'delay', py, { x: 999, y: 999 });
    expect(placed.position.x).toBeGreaterThanOrEqual(220 + 40);
    expect(placed.position.y).toBe(0);
    expect(placed.connectFrom).toEqual({ source: 'py', sourceHandle: 'error' });
  });

  it('does not wire what cannot be wired: an end has no outputs, a start takes no input', () => {
    const end = at('end', 'end', 0, 0);
    expect(placeNewNode([end], [], 'python', end, { x: 0, y: 0 }).connectFrom).toBeNull();
    const start = at('start', 'start', 0, 0);
    expect(placeNewNode([start], [], 'start', start, { x: 0, y: 0 }).connectFrom).toBeNull();
  });

  it('never lands on top of another node', () => {
    const nodes = [at('a', 'python', 0, 0), at('b', 'python', 300, 0)];
    const first = placeNewNode(nodes, [], 'python', nodes[0] ?? null, { x: 0, y: 0 });
    expect(first.position.y).toBeGreaterThan(80); // (300, 0) is taken by b, so it steps down
    const spot = freeSpot(nodes, { x: 0, y: 0 });
    expect(spot).not.toEqual({ x: 0, y: 0 });
    expect(freeSpot([], { x: 5, y: 7 })).toEqual({ x: 5, y: 7 });
  });

  it('leaves room for the note an unwired card shows, before React Flow has measured any of them', () => {
    const RENDERED_UNWIRED_PYTHON = 148; // measured in Chromium: the card and its "not reachable" note
    const nodes: ReturnType<typeof at>[] = [];
    for (const id of ['p1', 'p2', 'p3']) {
      const { position } = placeNewNode(nodes, [], 'python', null, { x: 250, y: 185 });
      nodes.push(at(id, 'python', position.x, position.y));
    }
    const ys = nodes.map((n) => n.position.y).sort((a, b) => a - b);
    expect(new Set(nodes.map((n) => n.position.x)).size).toBe(1);
    expect(ys[1]! - ys[0]!).toBeGreaterThanOrEqual(RENDERED_UNWIRED_PYTHON);
    expect(ys[2]! - ys[1]!).toBeGreaterThanOrEqual(RENDERED_UNWIRED_PYTHON);
  });

  it('still leaves room for the note when a card was measured before the validation showed it', () => {
    const RENDERED_UNWIRED_PYTHON = 148;
    const nodes: ReturnType<typeof at>[] = [];
    for (const [id, middle] of [['p1', 185], ['p2', 230], ['p3', 260], ['p4', 200]] as const) {
      const { position } = placeNewNode(nodes, [], 'python', null, { x: 250, y: middle }); // the view moved
      nodes.push({ ...at(id, 'python', position.x, position.y), measured: { width: 220, height: 94 } });
    }
    const ys = nodes.map((n) => n.position.y).sort((a, b) => a - b);
    for (let i = 1; i < ys.length; i++) expect(ys[i]! - ys[i - 1]!).toBeGreaterThanOrEqual(RENDERED_UNWIRED_PYTHON);
  });
});
