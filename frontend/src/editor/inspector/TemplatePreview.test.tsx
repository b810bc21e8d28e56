// @vitest-environment happy-dom
import { cleanup, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { PreviewContext, TemplatePreview } from './TemplatePreview';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

function answer(status: number, body: unknown) {
  return vi.fn(async () => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } }));
}

describe('TemplatePreview', () => {
  it('says there is no test data before a run', () => {
    render(
      <PreviewContext.Provider value={null}>
        <TemplatePreview source="{{ ctx.input.n }}" kind="template" />
      </PreviewContext.Provider>,
    );
    expect(screen.getByTestId('template-preview').textContent).toContain('No test data yet');
  });

  it('shows what the server resolved, or its error', async () => {
    const fetch = answer(200, { value: [1, 2] });
    vi.stubGlobal('fetch', fetch);
    const ctx = { input: { n: [1, 2] } };
    const { rerender } = render(
      <PreviewContext.Provider value={ctx}>
        <TemplatePreview source="{{ ctx.input.n }}" kind="template" />
      </PreviewContext.Provider>,
    );
    await waitFor(() => expect(screen.getByTestId('template-preview').dataset.state).toBe('ok'));
    expect(screen.getByTestId('template-preview').textContent).toContain('[1,2]');
    expect(JSON.parse(String((fetch.mock.calls[0] as unknown as [string, RequestInit])[1].body))).toEqual({ template: '{{ ctx.input.n }}', context: ctx });

    vi.stubGlobal('fetch', answer(400, { status_code: 400, detail: "'x' is undefined" }));
    rerender(
      <PreviewContext.Provider value={ctx}>
        <TemplatePreview source="ctx.x" kind="expression" />
      </PreviewContext.Provider>,
    );
    await waitFor(() => expect(screen.getByTestId('template-preview').dataset.state).toBe('error'));
    expect(screen.getByTestId('template-preview').textContent).toContain("'x' is undefined");
  });

  it("sends a switch case's expression with the switch's value template", async () => {
    const fetch = answer(200, { value: true });
    vi.stubGlobal('fetch', fetch);
    const ctx = { input: { kind: 12 } };
    render(
      <PreviewContext.Provider value={ctx}>
        <TemplatePreview source="value > 10" kind="expression" switchValue="{{ ctx.input.kind }}" />
      </PreviewContext.Provider>,
    );
    await waitFor(() => expect(screen.getByTestId('template-preview').dataset.state).toBe('ok'));
    expect(JSON.parse(String((fetch.mock.calls[0] as unknown as [string, RequestInit])[1].body))).toEqual({
      expression: 'value > 10',
      context: ctx,
      switchValue: '{{ ctx.input.kind }}',
    });
  });
});
