import { describe, expect, it } from 'vitest';

import { hasTargetHandle, sourceHandleIds } from './handles';
import { NODE_TYPES } from './model';
import { node } from './testing';

describe('sourceHandles', () => {
  it('gives each type the handles SPEC §2 lists', () => {
    expect(sourceHandleIds(node('s', 'start'))).toEqual(['default']);
    expect(sourceHandleIds(node('e', 'end'))).toEqual([]);
    expect(sourceHandleIds(node('p', 'python'))).toEqual(['success', 'error']);
    expect(sourceHandleIds(node('q', 'dataQuery'))).toEqual(['success', 'error']);
    expect(sourceHandleIds(node('d', 'delay'))).toEqual(['default']);
    expect(sourceHandleIds(node('l', 'loop'))).toEqual(['loop', 'done']);
  });

  it('gives a condition one handle per branch, in order, plus else', () => {
    const c = node('c', 'condition', {
      config: {
        branches: [
          { id: 'large', label: 'Large', expression: 'ctx.x > 10' },
          { id: 'small', label: '', expression: 'ctx.x < 3' },
        ],
      },
    });
    expect(sourceHandleIds(c)).toEqual(['large', 'small', 'else']);
  });

  it('gives every type but start an input', () => {
    expect(NODE_TYPES.filter((t) => !hasTargetHandle(t))).toEqual(['start']);
  });
});
