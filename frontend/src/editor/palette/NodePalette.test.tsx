// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { FOCUS_PALETTE_EVENT, NodePalette } from './NodePalette';

afterEach(cleanup);

describe('NodePalette', () => {
  it('filters as you type and adds the highlighted type with Enter, keyboard only', () => {
    const onAdd = vi.fn();
    render(<NodePalette onAdd={onAdd} disabled={false} />);
    const search = screen.getByTestId('palette-search');
    window.dispatchEvent(new Event(FOCUS_PALETTE_EVENT));
    expect(document.activeElement).toBe(search);

    fireEvent.change(search, { target: { value: 'sql' } });
    expect(screen.getAllByRole('option').map((o) => o.dataset.testid)).toEqual(['palette-dataQuery']);
    fireEvent.keyDown(search, { key: 'Enter' });
    expect(onAdd).toHaveBeenCalledWith('dataQuery');
    expect((search as HTMLInputElement).value).toBe('');

    fireEvent.change(search, { target: { value: 'o' } });
    const options = screen.getAllByRole('option');
    expect(options[0]?.getAttribute('aria-selected')).toBe('true');
    fireEvent.keyDown(search, { key: 'ArrowDown' });
    expect(screen.getAllByRole('option')[1]?.getAttribute('aria-selected')).toBe('true');
    fireEvent.keyDown(search, { key: 'Enter' });
    expect(onAdd).toHaveBeenLastCalledWith(options[1]?.dataset.testid?.replace('palette-', ''));
  });

  it('says when nothing matches and adds nothing when disabled', () => {
    const onAdd = vi.fn();
    render(<NodePalette onAdd={onAdd} disabled />);
    fireEvent.click(screen.getByTestId('palette-python'));
    expect(onAdd).not.toHaveBeenCalled();
    cleanup();
    render(<NodePalette onAdd={onAdd} disabled={false} />);
    fireEvent.change(screen.getByTestId('palette-search'), { target: { value: 'zzz' } });
    expect(screen.getByTestId('palette-empty').textContent).toContain('zzz');
  });
});
