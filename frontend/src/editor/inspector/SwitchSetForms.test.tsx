// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { useState, type ComponentType } from 'react';
import { afterEach, describe, expect, it } from 'vitest';

import { sourceHandles } from '../../graph/handles';
import type { ConfigByType, EditorNodeOf, NodeType } from '../../graph/model';
import { takenHandle } from '../../graph/runPath';
import { EndForm, SetForm, SwitchForm, type FormProps } from './forms';
import { parseLoose, showLoose } from './SwitchSetForms';

afterEach(cleanup);

function renderForm<T extends NodeType>(
  type: T,
  Form: ComponentType<FormProps<T>>,
  initial: ConfigByType[T],
  { problems = {}, readOnly = false }: { problems?: Record<string, string>; readOnly?: boolean } = {},
) {
  const configs: ConfigByType[T][] = [];
  function Harness() {
    const [config, setConfig] = useState(initial);
    const node = { id: 'n1', type, position: { x: 0, y: 0 }, data: { label: 'Node', config } } as unknown as EditorNodeOf<T>;
    return (
      <Form
        node={node}
        paths={[]}
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

describe('SwitchForm', () => {
  const initial: ConfigByType['switch'] = { value: '{{ ctx.input.kind }}', cases: [{ handle: 'vip', equals: 'vip' }] };

  it('adds cases with readable handles and stores each matcher with its typed value', () => {
    const configs = renderForm('switch', SwitchForm, initial);
    fireEvent.click(screen.getByTestId('case-add'));
    expect(last(configs)?.cases[1]).toEqual({ handle: 'case2', equals: '' });
    fireEvent.change(screen.getByTestId('case-1-matcher'), { target: { value: 'in' } });
    fireEvent.change(screen.getByTestId('case-1-text'), { target: { value: 'gold, 3, true' } });
    expect(last(configs)?.cases[1]).toEqual({ handle: 'case2', in: ['gold', 3, true] });
    fireEvent.change(screen.getByTestId('case-1-matcher'), { target: { value: 'matches' } });
    fireEvent.change(screen.getByTestId('case-1-text'), { target: { value: '^ord-\\d+$' } });
    expect(last(configs)?.cases[1]).toEqual({ handle: 'case2', matches: '^ord-\\d+$' });
    fireEvent.change(screen.getByTestId('case-1-handle'), { target: { value: 'orders' } });
    fireEvent.change(screen.getByTestId('case-0-text'), { target: { value: '42' } });
    expect(last(configs)?.cases).toEqual([
      { handle: 'vip', equals: 42 },
      { handle: 'orders', matches: '^ord-\\d+$' },
    ]);
    fireEvent.click(screen.getByTestId('case-0-remove'));
    expect(last(configs)?.cases.map((c) => c.handle)).toEqual(['orders']);
  });

  it("shows a bad regex's problem under its case", () => {
    const cases = [{ handle: 'a', equals: 1 }, { handle: 'b', matches: '(a+)+' }];
    renderForm('switch', SwitchForm, { value: 'x', cases }, { problems: { 'config.cases[1].matches': 'can take exponential time' } });
    expect(within(screen.getByTestId('case-1')).getByText('can take exponential time')).toBeTruthy();
    expect(within(screen.getByTestId('case-0')).queryByText('can take exponential time')).toBeNull();
  });

  it('gives the canvas one labelled port per case, then default, and reads the taken one from the output', () => {
    const node = { id: 's', type: 'switch', position: { x: 0, y: 0 }, data: { label: 'S', config: { value: 'x', cases: [{ handle: 'a', equals: 1 }, { handle: 'b', in: [2] }] } } };
    const handles = sourceHandles(node as EditorNodeOf<'switch'>);
    expect(handles.map((h) => [h.id, h.label])).toEqual([
      ['a', 'a'],
      ['b', 'b'],
      ['default', 'default'],
    ]);
    expect(takenHandle(node as EditorNodeOf<'switch'>, { handle: 'b', value: 2 })).toBe('b');
  });
});

describe('loose values', () => {
  it('round-trips text and JSON', () => {
    for (const value of ['vip', '3', 3, true, null, 'a b', [1]]) expect(parseLoose(showLoose(value))).toEqual(value);
  });
});

describe('SetForm', () => {
  it('edits names and values, adds and removes fields, and toggles keepInput', () => {
    const configs = renderForm('set', SetForm, { fields: [{ name: 'total', value: '{{ ctx.sum }}' }], keepInput: false });
    fireEvent.click(screen.getByTestId('set-fields-add'));
    fireEvent.change(screen.getByTestId('set-field-1-name'), { target: { value: 'customer.name' } });
    fireEvent.change(screen.getByTestId('set-field-1-value'), { target: { value: '{{ ctx.input.who }}' } });
    expect(last(configs)?.fields).toEqual([
      { name: 'total', value: '{{ ctx.sum }}' },
      { name: 'customer.name', value: '{{ ctx.input.who }}' },
    ]);
    fireEvent.click(within(screen.getByTestId('set-keep-input')).getByRole('checkbox'));
    expect(last(configs)?.keepInput).toBe(true);
    fireEvent.click(screen.getByLabelText('Remove total'));
    expect(last(configs)).toEqual({ fields: [{ name: 'customer.name', value: '{{ ctx.input.who }}' }], keepInput: true });
  });

  it('shows a bad name under its field', () => {
    renderForm('set', SetForm, { fields: [{ name: 'a..b', value: 1 }] }, { problems: { 'config.fields[0].name': 'up to 16 dot-separated keys' } });
    expect(screen.getByText('up to 16 dot-separated keys')).toBeTruthy();
    expect((screen.getByTestId('set-field-0-value') as HTMLInputElement).value).toBe('1');
  });
});

describe("EndForm's one-click output", () => {
  it("returns the previous node's output as result, keeping the other parameters", () => {
    const configs: ConfigByType['end'][] = [];
    const node = { id: 'end', type: 'end', position: { x: 0, y: 0 }, data: { label: 'End', config: { outputParameters: { n: '1' } } } } as EditorNodeOf<'end'>;
    render(<EndForm node={node} paths={[]} readOnly={false} problemAt={() => undefined} setConfig={(c) => configs.push(c)} previous={[{ id: 'shape', label: 'Shape', variable: 'shaped' }]} />);
    fireEvent.click(screen.getByTestId('end-return-shape'));
    expect(configs).toEqual([{ outputParameters: { n: '1', result: '{{ ctx.shaped }}' } }]);
  });
});
