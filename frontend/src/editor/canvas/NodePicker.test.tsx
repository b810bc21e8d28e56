// @vitest-environment happy-dom
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { ReactFlowProvider } from '@xyflow/react';
import { afterEach, describe, expect, it } from 'vitest';

import { starterDefinition } from '../../graph/convert';
import { createEditorStore } from '../editorStore';
import { EditorStoreProvider } from '../storeContext';
import { NodePickerHost, openNodePicker } from './NodePicker';

afterEach(cleanup);

function setUp() {
  const store = createEditorStore();
  store.getState().load({ workflowId: 'w', version: 1, title: 'T', description: null, options: null }, starterDefinition('T'));
  render(
    <ReactFlowProvider>
      <EditorStoreProvider store={store}>
        <NodePickerHost />
      </EditorStoreProvider>
    </ReactFlowProvider>,
  );
  return store;
}

describe('the node picker', () => {
  it('offers the types that fit after a handle, filters as typed, and adds the chosen one wired to it', () => {
    const store = setUp();
    act(() => openNodePicker({ clientX: 300, clientY: 200, link: { kind: 'from', source: 'start', sourceHandle: 'default' } }));
    expect(screen.queryByTestId('node-picker-start')).toBeNull();
    expect(screen.getByTestId('node-picker-end')).toBeTruthy();
    const search = screen.getByTestId('node-picker-search');
    fireEvent.change(search, { target: { value: 'branch' } });
    expect(screen.getByTestId('node-picker-condition').getAttribute('aria-selected')).toBe('true');
    fireEvent.keyDown(search, { key: 'Enter' });
    expect(screen.queryByTestId('node-picker')).toBeNull();
    const added = store.getState().nodes.find((n) => n.type === 'condition');
    expect(added).toBeTruthy();
    expect(store.getState().edges.some((e) => e.source === 'start' && e.target === added?.id)).toBe(true);
    expect(store.getState().inspectorNodeId).toBe(added?.id);
  });

  it('closes on Escape without adding anything', () => {
    const store = setUp();
    const before = store.getState().nodes.length;
    act(() => openNodePicker({ clientX: 10, clientY: 10, link: { kind: 'to', target: 'end' } }));
    expect(screen.queryByTestId('node-picker-end')).toBeNull(); // a node wired into `end` needs an output
    fireEvent.keyDown(screen.getByTestId('node-picker-search'), { key: 'Escape' });
    expect(screen.queryByTestId('node-picker')).toBeNull();
    expect(store.getState().nodes).toHaveLength(before);
  });
});
