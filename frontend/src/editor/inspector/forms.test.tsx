// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { useState, type ComponentType } from 'react';
import { afterEach, describe, expect, it } from 'vitest';

import type { ConfigByType, EditorNodeOf, NodeType } from '../../graph/model';
import { ConditionForm, DelayForm, EndForm, LoopForm, PythonForm, type FormProps } from './forms';

afterEach(cleanup);

type Options<T extends NodeType> = { readOnly?: boolean; problems?: Record<string, string>; paths?: string[] } & { initial: ConfigByType[T] };

/** Renders a form over its own config state, as the inspector does; `configs` records every setConfig. */
function renderForm<T extends NodeType>(type: T, Form: ComponentType<FormProps<T>>, { initial, readOnly = false, problems = {}, paths = [] }: Options<T>) {
  const configs: ConfigByType[T][] = [];
  function Harness() {
    const [config, setConfig] = useState(initial);
    const node = { id: 'n1', type, position: { x: 0, y: 0 }, data: { label: 'Node', config } } as unknown as EditorNodeOf<T>;
    return (
      <Form
        node={node}
        paths={paths}
        readOnly={readOnly}
        problemAt={(path) => problems[path]}
        setConfig={(next) => {
          configs.push(next);
          setConfig(next);
        }}
      />
    );
  }
  render(<Harness />);
  return configs;
}

const last = <T,>(items: T[]): T | undefined => items[items.length - 1];

describe('PythonForm', () => {
  it('shows the code in the editor and the problem the server found in it', async () => {
    renderForm('python', PythonForm, { initial: { code: "return {'n': 1}" }, problems: { 'config.code': 'line 1: invalid syntax' } });
    await waitFor(() => expect(screen.getByTestId('python-code').textContent).toContain("return {'n': 1}"), { timeout: 10_000 }); // the editor loads lazily: slow on a busy machine
    expect(screen.getByText('line 1: invalid syntax')).toBeTruthy();
  });

  it('cannot be typed into when read-only', async () => {
    renderForm('python', PythonForm, { initial: { code: 'return 1' }, readOnly: true });
    await waitFor(() => expect(screen.getByTestId('python-code').querySelector('.cm-content')).toBeTruthy(), { timeout: 10_000 });
    expect(screen.getByTestId('python-code').querySelector('.cm-content')?.getAttribute('contenteditable')).toBe('false');
  });
});

describe('ConditionForm', () => {
  const two = { branches: [{ id: 'b1', label: 'Big', expression: 'ctx.n > 10' }, { id: 'b2', label: 'Small', expression: 'ctx.n > 0' }] };

  it('adds a branch with a new id, edits, reorders and removes branches', () => {
    const configs = renderForm('condition', ConditionForm, { initial: two });
    fireEvent.click(screen.getByTestId('branch-add'));
    const added = last(configs)?.branches[2];
    expect(added).toMatchObject({ label: 'Branch 3', expression: '' });
    expect(['b1', 'b2']).not.toContain(added?.id);

    fireEvent.change(screen.getByTestId('branch-0-label'), { target: { value: 'Huge' } });
    expect(last(configs)?.branches[0]).toEqual({ id: 'b1', label: 'Huge', expression: 'ctx.n > 10' });
    fireEvent.change(screen.getByTestId('branch-1-expression'), { target: { value: 'ctx.n > 1' } });
    expect(last(configs)?.branches[1]?.expression).toBe('ctx.n > 1');

    fireEvent.click(screen.getByTestId('branch-0-down'));
    expect(last(configs)?.branches.map((b) => b.id)).toEqual(['b2', 'b1', added?.id]);
    fireEvent.click(screen.getByTestId('branch-2-remove'));
    expect(last(configs)?.branches.map((b) => b.id)).toEqual(['b2', 'b1']);
  });

  it("shows an expression's problem under its branch and offers no edits when read-only", () => {
    renderForm('condition', ConditionForm, { initial: two, readOnly: true, problems: { 'config.branches[1].expression': "'n' is undefined" } });
    expect(within(screen.getByTestId('branch-1')).getByText("'n' is undefined")).toBeTruthy();
    expect(within(screen.getByTestId('branch-0')).queryByText("'n' is undefined")).toBeNull();
    expect(screen.queryByTestId('branch-add')).toBeNull();
    expect(screen.queryByTestId('branch-0-remove')).toBeNull();
  });
});

describe('DelayForm', () => {
  it('stores a number as a number and anything else as a template', () => {
    const configs = renderForm('delay', DelayForm, { initial: { seconds: 5 } });
    const input = screen.getByTestId('delay-seconds') as HTMLInputElement;
    expect(input.value).toBe('5');
    fireEvent.change(input, { target: { value: '2.5' } });
    expect(last(configs)).toEqual({ seconds: 2.5 });
    fireEvent.change(input, { target: { value: '{{ ctx.input.wait }}' } });
    expect(last(configs)).toEqual({ seconds: '{{ ctx.input.wait }}' });
  });

  it("shows the server's problem instead of the hint", () => {
    renderForm('delay', DelayForm, { initial: { seconds: -1 }, problems: { 'config.seconds': 'must be between 0 and 30 days' } });
    expect(screen.getByText('must be between 0 and 30 days')).toBeTruthy();
    expect(screen.queryByText(/No worker is held/)).toBeNull();
  });
});

describe('LoopForm', () => {
  it('edits the items template, the concurrency and the item limit (cleared: no limit)', () => {
    const configs = renderForm('loop', LoopForm, { initial: { items: '{{ ctx.input.rows }}', concurrency: 2, maxItems: 100 } });
    fireEvent.change(screen.getByTestId('loop-items'), { target: { value: '{{ ctx.fetch.rows }}' } });
    expect(last(configs)).toEqual({ items: '{{ ctx.fetch.rows }}', concurrency: 2, maxItems: 100 });
    fireEvent.change(screen.getByLabelText('Concurrency'), { target: { value: '8' } });
    expect(last(configs)?.concurrency).toBe(8);
    fireEvent.change(screen.getByLabelText('Max items'), { target: { value: '' } });
    expect(last(configs)).toEqual({ items: '{{ ctx.fetch.rows }}', concurrency: 8 });
    expect(last(configs)).not.toHaveProperty('maxItems');
  });

  it('suggests ctx paths while the items are typed', () => {
    renderForm('loop', LoopForm, { initial: { items: '' }, paths: ['ctx.input', 'ctx.fetch'] });
    const input = screen.getByTestId('loop-items') as HTMLInputElement;
    fireEvent.change(input, { target: { value: '{{ ctx.f', selectionStart: 8 } });
    expect(screen.getByTestId('template-suggestions').textContent).toContain('ctx.fetch');
  });

  it('takes a suggestion with Enter only after moving to it', () => {
    const configs = renderForm('loop', LoopForm, { initial: { items: '' }, paths: ['ctx.input', 'ctx.fetch'] });
    const input = screen.getByTestId('loop-items') as HTMLInputElement;
    fireEvent.change(input, { target: { value: '{{ ctx.', selectionStart: 7 } });
    fireEvent.keyDown(input, { key: 'Enter' });
    expect(last(configs)?.items).toBe('{{ ctx.');
    fireEvent.keyDown(input, { key: 'ArrowDown' });
    fireEvent.keyDown(input, { key: 'ArrowDown' });
    expect(input.getAttribute('aria-activedescendant')).toMatch(/-1$/);
    fireEvent.keyDown(input, { key: 'Enter' });
    expect(last(configs)?.items).toBe('{{ ctx.fetch');
  });
});

describe('EndForm', () => {
  it('adds, renames, fills and removes output parameters', () => {
    const configs = renderForm('end', EndForm, { initial: { outputParameters: { total: '{{ ctx.sum }}' } } });
    fireEvent.click(screen.getByTestId('output-parameters-add'));
    expect(last(configs)).toEqual({ outputParameters: { total: '{{ ctx.sum }}', param2: '' } });
    fireEvent.change(screen.getAllByLabelText('name')[1] as HTMLElement, { target: { value: 'count' } });
    expect(Object.keys(last(configs)?.outputParameters ?? {})).toEqual(['total', 'count']);
    fireEvent.change(screen.getByLabelText('value of count'), { target: { value: '{{ ctx.n }}' } });
    expect(last(configs)?.outputParameters).toEqual({ total: '{{ ctx.sum }}', count: '{{ ctx.n }}' });
    fireEvent.click(screen.getByLabelText('Remove total'));
    expect(last(configs)).toEqual({ outputParameters: { count: '{{ ctx.n }}' } });
  });

  it('shows none yet, and no add button when read-only', () => {
    renderForm('end', EndForm, { initial: { outputParameters: {} }, readOnly: true });
    expect(screen.getByTestId('output-parameters').textContent).toContain('None yet.');
    expect(screen.queryByTestId('output-parameters-add')).toBeNull();
  });
});
