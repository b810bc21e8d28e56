import { describe, expect, it } from 'vitest';

import { jsonProblem } from './jsonCheck';

describe('checking the test input as it is typed', () => {
  it('accepts JSON', () => {
    expect(jsonProblem('{"a": [1, 2]}')).toBeNull();
    expect(jsonProblem('3')).toBeNull();
  });

  it('names the line and column of the first error', () => {
    const problem = jsonProblem('{\n  "a": 1,\n  "b": }');
    expect(problem).toMatchObject({ line: 3, column: 8 });
    expect(problem?.message).not.toMatch(/position/);
    expect(jsonProblem('{"a": 1')).toMatchObject({ line: 1 });
    expect(jsonProblem('')?.message).toMatch(/Empty/);
  });
});
