// @vitest-environment happy-dom
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';

import { diffVersions } from '../graph/versionDiff';
import { DiffView } from './VersionDiffDialog';

afterEach(cleanup);

describe('DiffView', () => {
  it('shows each change with the older value beside the newer one', () => {
    const diff = diffVersions(
      { nodes: [{ id: 'a', type: 'python', label: 'Fetch', config: { code: 'return 1' } }], edges: [] },
      { nodes: [{ id: 'a', type: 'python', label: 'Fetch', config: { code: 'return 2' } }, { id: 'b', type: 'end', label: 'Done', config: {} }], edges: [{ id: 'e', source: 'a', target: 'b', sourceHandle: 'success' }] },
    );
    const { container } = render(<DiffView diff={diff} before={1} after={2} />);
    const changed = screen.getAllByTestId('diff-node');
    expect(changed.map((n) => [n.dataset.nodeId, n.dataset.kind])).toEqual([
      ['a', 'changed'],
      ['b', 'added'],
    ]);
    const code = screen.getAllByTestId('diff-field').find((r) => r.dataset.path === 'config.code') as HTMLElement;
    const [before, after] = Array.from(code.querySelectorAll('td')).map((td) => td.textContent);
    expect([before, after]).toEqual(['return 1', 'return 2']);
    expect(screen.getByTestId('diff-edge').dataset.kind).toBe('added');
    expect(Array.from(container.querySelectorAll('thead th')).map((h) => h.textContent)).toEqual(['', 'v1', 'v2']);
  });

  it('says when two versions do the same', () => {
    render(<DiffView diff={diffVersions({ nodes: [], edges: [] }, { nodes: [], edges: [] })} before={3} after={4} />);
    expect(screen.getByTestId('diff-none')).toBeTruthy();
  });
});
