/** The side panel for the selected node: its settings form, and its data from the last run. */
import { useEffect, useMemo, useRef, useState } from 'react';

import { inputContext, knownPaths } from '../../graph/context';
import { VARIABLE_PATTERN } from '../../graph/ids';
import {
  DEFAULT_RETRY,
  DEFAULT_TIMEOUT_SECONDS,
  NODE_TYPE_INFO,
  type ConfigByType,
  type EditorEdge,
  type EditorNode,
  type ErrorHandling,
  type JoinMode,
  type NodeData,
} from '../../graph/model';
import { completedOutputs } from '../../runs/runReducer';
import { CopyIcon, TrashIcon } from '../../shared/ui/icons';
import { useEditor, useEditorStoreApi } from '../storeContext';
import { Field, NumberInput } from './fields';
import {
  ConditionForm,
  DataQueryForm,
  DelayForm,
  EndForm,
  LoopForm,
  problemLookup,
  PythonForm,
  SetForm,
  shownInline,
  StartForm,
  SwitchForm,
  WaitForm,
  WorkflowForm,
  type PreviousNode,
} from './forms';
import { HttpRequestForm } from './HttpRequestForm';
import { RunDataTab } from './RunDataTab';
import { PreviewContext } from './TemplatePreview';
import { usePreviewContext } from './usePreviewContext';

function parseInput(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The sources of the edges into `nodeId`, each once, in edge order (the end form's one-click output). */
function previousNodes(nodes: readonly EditorNode[], edges: readonly EditorEdge[], nodeId: string): PreviousNode[] {
  const seen = new Set<string>();
  const found: PreviousNode[] = [];
  for (const e of edges) {
    if (e.target !== nodeId || seen.has(e.source)) continue;
    seen.add(e.source);
    const source = nodes.find((n) => n.id === e.source);
    if (source) found.push({ id: source.id, label: source.data.label || source.id, variable: source.data.outputVariable || source.id });
  }
  return found;
}

export function ConfigForm({ node, paths, readOnly, problemAt }: { node: EditorNode; paths: string[]; readOnly: boolean; problemAt: (p: string) => string | undefined }) {
  const store = useEditorStoreApi();
  const workflowId = useEditor((s) => s.workflowId);
  // a string, so that the selection compares equal while the incoming edges and their sources stay the same
  const previousJson = useEditor((s) => (node.type === 'end' ? JSON.stringify(previousNodes(s.nodes, s.edges, node.id)) : '[]'));
  const previous = useMemo(() => JSON.parse(previousJson) as PreviousNode[], [previousJson]);
  const setConfig = (config: ConfigByType[EditorNode['type']], key?: string) =>
    store.getState().updateNode(node.id, { config } as Partial<NodeData>, key);
  const common = { paths, readOnly, problemAt, setConfig };
  switch (node.type) {
    case 'start':
      return <StartForm />;
    case 'end':
      return <EndForm node={node} {...common} previous={previous} />;
    case 'python':
      return <PythonForm node={node} {...common} />;
    case 'dataQuery':
      return <DataQueryForm node={node} {...common} />;
    case 'http':
      return <HttpRequestForm node={node} {...common} />;
    case 'workflow':
      return <WorkflowForm node={node} {...common} currentWorkflowId={workflowId} />;
    case 'condition':
      return <ConditionForm node={node} {...common} />;
    case 'delay':
      return <DelayForm node={node} {...common} />;
    case 'wait':
      return <WaitForm node={node} {...common} />;
    case 'loop':
      return <LoopForm node={node} {...common} />;
    case 'switch':
      return <SwitchForm node={node} {...common} />;
    case 'set':
      return <SetForm node={node} {...common} />;
  }
}

function ExecutionSettings({ node, readOnly, problemAt }: { node: EditorNode; readOnly: boolean; problemAt: (p: string) => string | undefined }) {
  const store = useEditorStoreApi();
  const data = node.data;
  const update = (patch: Partial<NodeData>, key?: string) => store.getState().updateNode(node.id, patch, key);
  const retry = data.retry ?? DEFAULT_RETRY;
  const setRetry = (patch: Partial<typeof retry>) => update({ retry: { ...retry, ...patch } }, `retry:${node.id}`);
  // The variable is renamed when the field is left (or Enter): every template, expression and code that
  // used the old name follows in the same undo step. Renaming at each keystroke would pass through
  // half-typed names that may collide with another node's.
  const [draft, setDraft] = useState(data.outputVariable ?? '');
  useEffect(() => setDraft(data.outputVariable ?? ''), [data.outputVariable, node.id]);
  const commitVariable = () => {
    if (draft === (data.outputVariable ?? '') || (draft && !VARIABLE_PATTERN.test(draft))) return;
    store.getState().renameVariable(node.id, draft || undefined);
  };
  const variableError = draft && !VARIABLE_PATTERN.test(draft) ? 'A letter or _ then letters, digits or _' : problemAt('outputVariable');
  return (
    <div className="settings-group" data-testid="execution-settings">
      {node.type !== 'end' && (
        <Field
          label="Output variable"
          error={variableError}
          hint={<>Downstream nodes read this node’s output as <code>ctx.{data.outputVariable || node.id}</code>; renaming it updates them.</>}
        >
          <input
            className="input input--mono"
            value={draft}
            placeholder={node.id}
            readOnly={readOnly}
            data-testid="output-variable"
            onChange={(e) => setDraft(e.target.value)}
            onBlur={commitVariable}
            onKeyDown={(e) => {
              if (e.key === 'Enter') commitVariable();
            }}
          />
        </Field>
      )}
      {node.type !== 'start' && (
        <>
          <div className="field-row">
            <Field label="Max attempts" error={problemAt('retry.maxAttempts')}>
              <NumberInput value={retry.maxAttempts} min={1} max={10} readOnly={readOnly} testId="retry-max" onChange={(v) => setRetry({ maxAttempts: v ?? 1 })} />
            </Field>
            <Field label="Backoff (s)">
              <NumberInput value={retry.backoffSeconds} min={0} step={0.5} readOnly={readOnly} onChange={(v) => setRetry({ backoffSeconds: v ?? 0 })} />
            </Field>
            <Field label="Max backoff (s)">
              <NumberInput value={retry.maxBackoffSeconds} min={0} readOnly={readOnly} onChange={(v) => setRetry({ maxBackoffSeconds: v ?? 0 })} />
            </Field>
          </div>
          <div className="field-row">
            <Field label="Timeout (s)" error={problemAt('timeoutSeconds')}>
              <NumberInput
                value={data.timeoutSeconds}
                placeholder={String(DEFAULT_TIMEOUT_SECONDS)}
                min={0}
                readOnly={readOnly}
                testId="timeout"
                onChange={(v) => update({ timeoutSeconds: v }, `timeout:${node.id}`)}
              />
            </Field>
            <Field label="Join mode" hint="When several edges lead in">
              <select
                className="input"
                value={data.joinMode ?? 'all'}
                disabled={readOnly}
                data-testid="join-mode"
                onChange={(e) => update({ joinMode: e.target.value as JoinMode })}
              >
                <option value="all">all — wait for every input</option>
                <option value="any">any — run on the first</option>
              </select>
            </Field>
          </div>
          <Field label="On error" hint="After the last failed attempt">
            <select
              className="input"
              value={data.errorHandling ?? 'continue'}
              disabled={readOnly}
              data-testid="error-handling"
              onChange={(e) => update({ errorHandling: e.target.value as ErrorHandling })}
            >
              <option value="continue">continue on the error handle (fail the run if none)</option>
              <option value="fail_workflow">fail the workflow at once</option>
            </select>
          </Field>
        </>
      )}
    </div>
  );
}

export function NodeInspector({ onTestFromHere, runView = false }: { onTestFromHere?: (nodeId: string) => void; runView?: boolean }) {
  const store = useEditorStoreApi();
  const nodeId = useEditor((s) => s.inspectorNodeId);
  const node = useEditor((s) => s.nodes.find((n) => n.id === s.inspectorNodeId));
  const nodes = useEditor((s) => s.nodes);
  const edges = useEditor((s) => s.edges);
  const run = useEditor((s) => s.run);
  const testInput = useEditor((s) => s.testInput);
  const readOnly = useEditor((s) => s.readOnly);
  const problems = useEditor((s) => (s.inspectorNodeId ? s.problemIndex.byNode[s.inspectorNodeId] : undefined));
  const [tab, setTab] = useState<'settings' | 'data'>(runView ? 'data' : 'settings');
  const labelAtFocus = useRef<string | null>(null);

  const outputs = useMemo(() => completedOutputs(run), [run]);
  const paths = useMemo(
    () => (nodeId ? knownPaths(nodes, edges, nodeId, { input: run?.input ?? parseInput(testInput), outputs }) : []),
    [nodeId, nodes, edges, run, testInput, outputs],
  );
  const context = useMemo(
    () => (nodeId && run ? inputContext(nodes, edges, nodeId, { input: run.input, outputs }) : null),
    [nodeId, nodes, edges, run, outputs],
  );
  const previewContext = usePreviewContext(nodes, edges, nodeId, run, outputs);

  if (!node || !nodeId) return null;
  // A changed label gives the node the readable id it makes (`Count items` -> `count_items`).
  const relabel = () => {
    if (labelAtFocus.current !== null && labelAtFocus.current !== node.data.label) store.getState().renameIdFromLabel(node.id);
    labelAtFocus.current = node.data.label;
  };
  const info = NODE_TYPE_INFO[node.type];
  const problemAt = problemLookup(problems);
  const listed = (problems ?? []).filter((p) => tab === 'data' || !shownInline(p));
  return (
    <aside className="inspector" data-testid="inspector" data-node-id={node.id} aria-label={`${info.title} node settings`}>
      <header className="inspector__head" style={{ ['--accent' as string]: info.color }}>
        <span className="inspector__icon">{info.icon}</span>
        <div className="inspector__titles">
          <input
            className="inspector__label"
            value={node.data.label}
            readOnly={readOnly}
            aria-label="Node label"
            data-testid="node-label"
            onChange={(e) => store.getState().updateNode(node.id, { label: e.target.value }, `label:${node.id}`)}
            onFocus={() => (labelAtFocus.current = node.data.label)}
            onBlur={relabel}
            onKeyDown={(e) => {
              if (e.key === 'Enter') relabel();
            }}
          />
          <div className="inspector__meta">
            {info.title} · <code>{node.id}</code>
          </div>
        </div>
        {!readOnly && (
          <>
            <button
              type="button"
              className="icon-btn"
              title="Duplicate (Ctrl+D)"
              aria-label="Duplicate node"
              data-testid="node-duplicate"
              onClick={() => {
                const s = store.getState();
                s.onNodesChange(s.nodes.map((n) => ({ type: 'select' as const, id: n.id, selected: n.id === node.id })));
                s.duplicateSelection();
              }}
            >
              <CopyIcon />
            </button>
            <button
              type="button"
              className="icon-btn"
              title="Delete (Del)"
              aria-label="Delete node"
              data-testid="node-delete"
              onClick={() => store.getState().deleteElements([node.id], [])}
            >
              <TrashIcon />
            </button>
          </>
        )}
        <button
          type="button"
          className="icon-btn"
          title="Open the node details: input, parameters and output side by side (Enter, or double-click the node)"
          aria-label="Open node details"
          data-testid="node-open-details"
          onClick={() => store.getState().openDetails(node.id)}
        >
          ⤢
        </button>
        <button type="button" className="icon-btn" aria-label="Close panel" onClick={() => store.getState().openInspector(null)}>
          ×
        </button>
      </header>
      <nav className="tabs">
        <button type="button" className={tab === 'settings' ? 'is-active' : ''} onClick={() => setTab('settings')} data-testid="tab-settings">
          Settings
        </button>
        <button type="button" className={tab === 'data' ? 'is-active' : ''} onClick={() => setTab('data')} data-testid="tab-run-data">
          Run data{run?.nodes[node.id] ? ' ●' : ''}
        </button>
      </nav>
      <div className="inspector__body">
        {listed.length > 0 && (
          <ul className="problem-list problem-list--compact" data-testid="inspector-problems">
            {listed.map((p, i) => (
              <li key={i} className={`problem problem--${p.severity ?? 'error'}`}>
                {p.message}
              </li>
            ))}
          </ul>
        )}
        {tab === 'settings' ? (
          <PreviewContext.Provider value={previewContext}>
            <ConfigForm node={node} paths={paths} readOnly={readOnly} problemAt={problemAt} />
            <h4 className="section-title">Execution</h4>
            <ExecutionSettings node={node} readOnly={readOnly} problemAt={problemAt} />
          </PreviewContext.Provider>
        ) : (
          <RunDataTab node={node} context={context} onTestFromHere={runView ? undefined : onTestFromHere} />
        )}
      </div>
    </aside>
  );
}
