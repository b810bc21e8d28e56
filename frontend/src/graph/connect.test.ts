import { describe, expect, it } from 'vitest';

import { ancestors, checkConnection, descendants, findPath } from './connect';
import { edge, node } from './testing';

const nodes = [node('start', 'start'), node('a', 'python'), node('b', 'python'), node('c', 'condition'), node('end', 'end')];
const edges = [edge('start', 'a'), edge('a', 'b', 'success'), edge('b', 'c', 'success'), edge('c', 'end', 'yes')];

describe('checkConnection', () => {
  it('accepts a valid handle into a node that takes input', () => {
    expect(checkConnection(nodes, edges, { source: 'a', target: 'end', sourceHandle: 'error' })).toEqual({ ok: true });
    expect(checkConnection(nodes, edges, { source: 'c', target: 'end', sourceHandle: 'else' })).toEqual({ ok: true });
  });

  it('refuses a cycle and names it', () => {
    const check = checkConnection(nodes, edges, { source: 'c', target: 'a', sourceHandle: 'else' });
    expect(check).toEqual({ ok: false, reason: 'This would close a cycle: a → b → c → a' });
  });

  it('refuses a self-loop', () => {
    const check = checkConnection(nodes, edges, { source: 'b', target: 'b', sourceHandle: 'success' });
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toContain('itself');
  });

  it('refuses a handle the type does not have', () => {
    const check = checkConnection(nodes, edges, { source: 'a', target: 'end', sourceHandle: 'default' });
    expect(check.ok).toBe(false);
    if (!check.ok) expect(check.reason).toContain('success, error');
    expect(checkConnection(nodes, edges, { source: 'c', target: 'end', sourceHandle: 'nope' }).ok).toBe(false);
  });

  it('refuses edges into start and out of end', () => {
    expect(checkConnection(nodes, edges, { source: 'a', target: 'start', sourceHandle: 'error' }).ok).toBe(false);
    expect(checkConnection(nodes, edges, { source: 'end', target: 'a', sourceHandle: 'default' }).ok).toBe(false);
  });

  it('refuses a duplicate edge and unknown nodes', () => {
    expect(checkConnection(nodes, edges, { source: 'a', target: 'b', sourceHandle: 'success' }).ok).toBe(false);
    expect(checkConnection(nodes, edges, { source: 'a', target: 'zz', sourceHandle: 'success' }).ok).toBe(false);
    expect(checkConnection(nodes, edges, { source: null, target: 'a', sourceHandle: 'success' }).ok).toBe(false);
  });

  it('allows a second edge from another handle to the same target', () => {
    expect(checkConnection(nodes, edges, { source: 'a', target: 'b', sourceHandle: 'error' })).toEqual({ ok: true });
  });
});

describe('paths', () => {
  it('finds a path and none against the grain', () => {
    expect(findPath(edges, 'start', 'c')).toEqual(['start', 'a', 'b', 'c']);
    expect(findPath(edges, 'c', 'start')).toBeNull();
  });

  it('lists ancestors nearest first and descendants', () => {
    expect(ancestors(edges, 'c')).toEqual(['b', 'a', 'start']);
    expect(descendants(edges, 'a').sort()).toEqual(['b', 'c', 'end']);
  });
});
