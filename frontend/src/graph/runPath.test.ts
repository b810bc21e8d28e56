import { describe, expect, it } from 'vitest';

import { edgeRunState, takenHandle } from './runPath';
import { edge, node } from './testing';

describe('run path', () => {
  it('derives the handle a node left by', () => {
    expect(takenHandle(node('p', 'python'), { value: 1 })).toBe('success');
    expect(takenHandle(node('p', 'python'), { error: { type: 'ValueError', message: 'x' } })).toBe('error');
    expect(takenHandle(node('c', 'condition'), { branch: 'large' })).toBe('large');
    expect(takenHandle(node('s', 'start'), {})).toBe('default');
  });

  it('marks taken and not-taken edges', () => {
    const c = node('c', 'condition');
    expect(edgeRunState(edge('c', 'x', 'yes'), c, { status: 'COMPLETED', output: { branch: 'yes' } })).toBe('taken');
    expect(edgeRunState(edge('c', 'y', 'else'), c, { status: 'COMPLETED', output: { branch: 'yes' } })).toBe('not-taken');
    expect(edgeRunState(edge('c', 'y', 'else'), c, { status: 'RUNNING' })).toBe('idle');
    expect(edgeRunState(edge('c', 'y', 'else'), c, undefined)).toBe('idle');
    expect(edgeRunState(edge('c', 'y', 'else'), c, { status: 'SKIPPED' })).toBe('not-taken');
    const l = node('l', 'loop');
    expect(edgeRunState(edge('l', 'b', 'loop'), l, { status: 'COMPLETED', output: { count: 2, items: [] } })).toBe('taken');
    expect(edgeRunState(edge('l', 'b', 'loop'), l, { status: 'COMPLETED', output: { count: 0, items: [] } })).toBe('not-taken');
  });
});
