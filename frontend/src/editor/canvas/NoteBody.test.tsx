// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { NoteBody } from './CanvasOverlays';

afterEach(cleanup);

describe('a sticky note’s text', () => {
  it('shows Markdown rendered, and a click outside a link starts editing', async () => {
    const edit = vi.fn();
    render(<NoteBody text={'**Ask ops** before changing the SLA\n\n[runbook](https://wiki.example/sla)'} onEdit={edit} />);
    const view = screen.getByTestId('sticky-note-view');
    await waitFor(() => expect(view.querySelector('strong')?.textContent).toBe('Ask ops')); // once the renderer loaded
    expect(view.textContent).not.toContain('**');
    const link = view.querySelector('a') as HTMLAnchorElement;
    link.addEventListener('click', (e) => e.preventDefault()); // the test browser would really navigate
    fireEvent.click(link);
    expect(edit).not.toHaveBeenCalled(); // following the link does not open the editor
    fireEvent.click(view.querySelector('strong') as HTMLElement);
    expect(edit).toHaveBeenCalledTimes(1);
    fireEvent.keyDown(view, { key: 'Enter' });
    expect(edit).toHaveBeenCalledTimes(2);
  });

  it('renders a user’s HTML as text', async () => {
    render(<NoteBody text={'<img src=x onerror="window.hacked=1">\n\n**b**'} onEdit={null} />);
    const view = screen.getByTestId('sticky-note-view');
    await waitFor(() => expect(view.querySelector('strong')).not.toBeNull());
    expect(view.querySelector('img')).toBeNull();
    expect(view.textContent).toContain('<img src=x');
    expect(view.getAttribute('role')).toBeNull(); // read-only: not a button
  });
});
