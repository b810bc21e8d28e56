// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { useState } from 'react';
import { afterEach, describe, expect, it } from 'vitest';

import type { EditorNodeOf, WaitConfig } from '../../graph/model';
import { WaitForm } from './WaitForm';

afterEach(cleanup);

function renderWait(initial: WaitConfig, problems: Record<string, string> = {}) {
  const configs: WaitConfig[] = [];
  function Harness() {
    const [config, setConfig] = useState(initial);
    const node = { id: 'approve', type: 'wait', position: { x: 0, y: 0 }, data: { label: 'Approve', config } } as EditorNodeOf<'wait'>;
    return (
      <WaitForm
        node={node}
        paths={[]}
        readOnly={false}
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

describe('WaitForm', () => {
  it('names the URL template, switches to a form and edits its fields', () => {
    const configs = renderWait({ resumeOn: 'webhook', timeoutSeconds: 60 });
    expect(screen.getByText('{{ ctx.run.resumeUrls.approve }}')).toBeTruthy();
    expect(screen.queryByTestId('wait-fields')).toBeNull();

    fireEvent.change(screen.getByTestId('wait-resume-on'), { target: { value: 'form' } });
    expect(configs.at(-1)).toEqual({ resumeOn: 'form', timeoutSeconds: 60, fields: [] });
    fireEvent.click(screen.getByTestId('wait-field-add'));
    fireEvent.change(screen.getByTestId('wait-field-0-name'), { target: { value: 'size' } });
    fireEvent.change(screen.getByTestId('wait-field-0-type'), { target: { value: 'select' } });
    fireEvent.change(screen.getByTestId('wait-field-0-options'), { target: { value: 'S, M ,L' } });
    expect(configs.at(-1)?.fields).toEqual([{ name: 'size', label: '', type: 'select', required: false, options: ['S', 'M', 'L'] }]);

    fireEvent.change(screen.getByTestId('wait-timeout'), { target: { value: '' } });
    expect(configs.at(-1)?.timeoutSeconds).toBeUndefined();
    fireEvent.change(screen.getByTestId('wait-resume-on'), { target: { value: 'webhook' } });
    expect(configs.at(-1)?.fields).toBeUndefined();
  });

  it("shows the server's problem next to the field it names", () => {
    renderWait({ resumeOn: 'form', fields: [{ name: 'a', type: 'select' }] }, { 'config.fields[0].options': 'a select field needs options' });
    expect(screen.getByText('a select field needs options')).toBeTruthy();
  });
  it('an approval: approvers, required and self-approval; switching away drops them', () => {
    const configs = renderWait({ resumeOn: 'webhook' });
    fireEvent.change(screen.getByTestId('wait-resume-on'), { target: { value: 'approval' } });
    fireEvent.change(screen.getByTestId('wait-approvers'), { target: { value: 'ann@acme.test, bo@acme.test' } });
    fireEvent.change(screen.getByTestId('wait-required'), { target: { value: '2' } });
    fireEvent.click(screen.getByTestId('wait-allow-self'));
    expect(configs.at(-1)).toEqual({ resumeOn: 'approval', approvers: ['ann@acme.test', 'bo@acme.test'], required: 2, allowSelfApproval: true });
    fireEvent.change(screen.getByTestId('wait-resume-on'), { target: { value: 'webhook' } });
    expect(configs.at(-1)).toEqual({ resumeOn: 'webhook' });
  });
});
