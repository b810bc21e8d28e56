// @vitest-environment happy-dom
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';

import { TestInputCheck } from './TestInputCheck';

afterEach(cleanup);

describe('TestInputCheck', () => {
  it('shows the first JSON error with its line and column, or that the JSON is valid', () => {
    const { rerender } = render(<TestInputCheck text={'{\n  "a": }'} />);
    expect(screen.getByTestId('test-input-error').textContent).toMatch(/^Line 2, column 8: /);
    rerender(<TestInputCheck text={'{"a": 1}'} />);
    expect(screen.getByTestId('test-input-ok').textContent).toContain('Valid JSON');
  });
});
