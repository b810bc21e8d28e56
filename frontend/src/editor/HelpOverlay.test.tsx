// @vitest-environment happy-dom
import { cleanup, render, screen, within } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';

import { HelpOverlay } from './dialogs';

afterEach(cleanup);

describe('HelpOverlay', () => {
  it('lists Enter as opening the selected node’s details, on the canvas', () => {
    render(<HelpOverlay onClose={() => {}} />);
    const row = screen.getByTestId('shortcut-openDetails');
    expect(row.textContent).toMatch(/Open the selected node’s details/);
    expect(within(row).getByText('Enter').tagName).toBe('KBD');
    expect(row.closest('section')?.querySelector('h3')?.textContent).toBe('Canvas');
  });
});
