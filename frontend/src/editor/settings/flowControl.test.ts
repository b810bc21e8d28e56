import { describe, expect, it } from 'vitest';

import {
  concurrencyOf,
  debounceOf,
  debounceSecondsError,
  keyError,
  limitError,
  priorityError,
  priorityOf,
  withConcurrency,
  withDebounce,
  withPriority,
} from './flowControl';

describe('flow control options', () => {
  it('reads concurrency, debounce and priority tolerantly', () => {
    const options = { concurrency: { limit: 2, key: '{{ ctx.input.c }}', strategy: 'cancel_newest' }, debounce: { seconds: 5 }, priority: 80 };
    expect(concurrencyOf(options)).toEqual({ limit: 2, key: '{{ ctx.input.c }}', strategy: 'cancel_newest' });
    expect(concurrencyOf({ concurrency: { limit: 'x', strategy: 'drop' } })).toEqual({ limit: undefined, key: undefined, strategy: 'queue' });
    expect(concurrencyOf({ concurrency: 3 })).toBeNull();
    expect(debounceOf(options)).toEqual({ seconds: 5, key: undefined });
    expect(debounceOf(null)).toBeNull();
    expect(priorityOf(options)).toBe(80);
    expect(priorityOf({})).toBeUndefined();
  });

  it('writes them without defaults, keeping other keys, and removes them', () => {
    const options = { timeoutSeconds: 60 };
    expect(withConcurrency(options, { limit: 1, key: '', strategy: 'queue' })).toEqual({ timeoutSeconds: 60, concurrency: { limit: 1 } });
    expect(withConcurrency(options, { limit: 3, key: '{{ ctx.input.k }}', strategy: 'cancel_in_progress' })).toEqual({
      timeoutSeconds: 60,
      concurrency: { limit: 3, key: '{{ ctx.input.k }}', strategy: 'cancel_in_progress' },
    });
    expect(withConcurrency({ concurrency: { limit: 1 } }, null)).toBeNull();
    expect(withDebounce(options, { seconds: 2, key: '{{ ctx.input.doc }}' })).toEqual({ timeoutSeconds: 60, debounce: { seconds: 2, key: '{{ ctx.input.doc }}' } });
    expect(withDebounce({ debounce: { seconds: 2 } }, null)).toBeNull();
    expect(withPriority(options, 90)).toEqual({ timeoutSeconds: 60, priority: 90 });
    expect(withPriority({ priority: 90 }, 50)).toBeNull();
    expect(withPriority({ priority: 90 }, undefined)).toBeNull();
  });

  it('checks the ranges the server checks', () => {
    expect(limitError(undefined)).toMatch(/Required/);
    expect(limitError(0)).toMatch(/1 to 10,000/);
    expect(limitError(2.5)).toMatch(/whole number/);
    expect(limitError(10_000)).toBeUndefined();
    expect(debounceSecondsError(0)).toMatch(/Above 0/);
    expect(debounceSecondsError(0.5)).toBeUndefined();
    expect(debounceSecondsError(8 * 24 * 3600)).toMatch(/7 days/);
    expect(priorityError(0)).toMatch(/1 to 100/);
    expect(priorityError(101)).toMatch(/1 to 100/);
    expect(priorityError(50.5)).toMatch(/whole number/);
    expect(priorityError(100)).toBeUndefined();
    expect(keyError('{{ ctx.input.a ')).toMatch(/every \{\{/);
    expect(keyError('{{ ctx.input.a }}')).toBeUndefined();
    expect(keyError('x'.repeat(1001))).toMatch(/1000/);
  });
});
