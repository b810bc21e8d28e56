/**
 * The Run workflow node's form: pick a saved workflow of the tenant from a searchable list, choose the
 * version it runs (the latest when the node starts, or a fixed one), then one template field per input
 * the chosen workflow reads (`config.input`), keeping other keys already in the config editable.
 */
import { useEffect, useId, useState, type KeyboardEvent } from 'react';
import { Link } from 'react-router';

import { ApiError } from '../../api/client';
import { workflows } from '../../api/endpoints';
import type { VersionSummary, Workflow, WorkflowSummary } from '../../api/types';
import type { WorkflowConfig } from '../../graph/model';
import { formatTime } from '../../shared/format';
import { errorMessage } from '../../shared/toasts';
import { rememberWorkflowTitle } from '../workflowTitles';
import { Field, KeyValueEditor } from './fields';
import type { FormProps } from './forms';
import { TemplateInput } from './TemplateInput';

/** How long typing pauses before the list is searched again. */
export const SEARCH_DEBOUNCE_MS = 200;

function own(input: Readonly<Record<string, unknown>>, name: string): string | undefined {
  if (!Object.hasOwn(input, name)) return undefined;
  const value = input[name];
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The input for a newly picked workflow: a field per input it reads, keeping anything already typed. */
export function inputFor(inputs: readonly string[], input: Readonly<Record<string, string>>): Record<string, string> {
  const next = Object.create(null) as Record<string, string>;
  for (const name of inputs) next[name] = own(input, name) ?? '';
  for (const [name, value] of Object.entries(input)) if (!(name in next) && value !== '') next[name] = value;
  return { ...next };
}

function withoutVersion(config: WorkflowConfig): WorkflowConfig {
  const next = { ...config };
  delete next.version;
  return next;
}

type Search = { items: WorkflowSummary[]; error: string | null; loading: boolean };

/** Workflows whose title contains `text`, searched by the API a moment after typing stops. */
function useWorkflowSearch(text: string): Search {
  const [state, setState] = useState<Search>({ items: [], error: null, loading: true });
  useEffect(() => {
    const abort = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    const t = window.setTimeout(
      () => {
        workflows
          .search(text.trim(), abort.signal)
          .then((page) => setState({ items: page.items, error: null, loading: false }))
          .catch((err: unknown) => {
            if (!abort.signal.aborted) setState({ items: [], error: errorMessage(err), loading: false });
          });
      },
      text ? SEARCH_DEBOUNCE_MS : 0,
    );
    return () => {
      window.clearTimeout(t);
      abort.abort();
    };
  }, [text]);
  return state;
}

function WorkflowPicker({
  currentWorkflowId,
  onPick,
  onCancel,
  onTypeId,
}: {
  currentWorkflowId: string | null;
  onPick: (workflow: WorkflowSummary) => void;
  onCancel: (() => void) | null;
  onTypeId: (id: string) => void;
}) {
  const [text, setText] = useState('');
  const [active, setActive] = useState(0);
  const listId = useId();
  const search = useWorkflowSearch(text);
  const needle = text.trim().toLowerCase();
  // The API filters by title; filtering again keeps the list right while an older answer is shown.
  // A workflow never calls itself (that recursion only ends at the nesting limit), so it is not offered.
  const shown = search.items.filter((w) => w.id !== currentWorkflowId && (!needle || w.title.toLowerCase().includes(needle)));
  const current = Math.min(active, Math.max(shown.length - 1, 0));
  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (shown.length) setActive((current + (e.key === 'ArrowDown' ? 1 : shown.length - 1)) % shown.length);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      const choice = shown[current];
      if (choice) onPick(choice);
    } else if (e.key === 'Escape' && onCancel) {
      e.stopPropagation();
      onCancel();
    }
  };
  if (search.error !== null) {
    // Without the list, the id can still be typed.
    return (
      <div className="query-picker" data-testid="workflow-picker">
        <span className="muted small">Workflows could not be listed ({search.error}). Type the workflow id:</span>
        <input className="input input--mono" aria-label="Workflow id" data-testid="workflow-id" onChange={(e) => onTypeId(e.target.value.trim())} />
      </div>
    );
  }
  return (
    <div className="query-picker" data-testid="workflow-picker">
      <input
        className="input"
        value={text}
        placeholder="Search workflows by title…"
        aria-label="Search workflows"
        role="combobox"
        aria-expanded="true"
        aria-controls={listId}
        aria-activedescendant={shown[current] ? `${listId}-${current}` : undefined}
        aria-busy={search.loading}
        autoFocus={onCancel !== null}
        data-testid="workflow-search"
        onChange={(e) => {
          setText(e.target.value);
          setActive(0);
        }}
        onKeyDown={onKeyDown}
      />
      {shown.length > 0 && (
        <ul className="query-picker__list" id={listId} role="listbox" aria-label="Workflows" data-testid="workflow-options">
          {shown.map((w, i) => (
            <li
              key={w.id}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === current}
              data-testid="workflow-option"
              data-id={w.id}
              data-title={w.title}
              onMouseDown={(e) => e.preventDefault()}
              onClick={() => onPick(w)}
            >
              {w.title || <span className="muted">untitled</span>}
              <span className="muted small">
                {' '}
                v{w.version}
              </span>
            </li>
          ))}
        </ul>
      )}
      {!search.loading && shown.length === 0 && (
        <div className="muted small" data-testid="workflow-none">
          {needle ? `No workflow title contains “${text.trim()}”.` : 'No saved workflows yet.'}
        </div>
      )}
      {onCancel && (
        <button type="button" className="btn btn--small btn--ghost" onClick={onCancel}>
          Cancel
        </button>
      )}
    </div>
  );
}

type Target =
  | { state: 'none' | 'loading' | 'missing' }
  | { state: 'error'; message: string }
  | { state: 'ok'; workflow: Workflow; versions: VersionSummary[] };

/** The called workflow (latest version) and its version history. */
function useTarget(workflowId: string): Target {
  const [target, setTarget] = useState<Target>({ state: 'none' });
  useEffect(() => {
    if (!workflowId) {
      setTarget({ state: 'none' });
      return;
    }
    let live = true;
    setTarget({ state: 'loading' });
    Promise.all([workflows.get(workflowId), workflows.versions(workflowId).catch(() => ({ items: [] as VersionSummary[] }))])
      .then(([workflow, versions]) => {
        rememberWorkflowTitle(workflowId, workflow.title);
        if (live) setTarget({ state: 'ok', workflow, versions: versions.items });
      })
      .catch((err: unknown) => {
        if (!live) return;
        if (err instanceof ApiError && err.status === 404) {
          rememberWorkflowTitle(workflowId, false);
          setTarget({ state: 'missing' });
        } else setTarget({ state: 'error', message: errorMessage(err) });
      });
    return () => {
      live = false;
    };
  }, [workflowId]);
  return target;
}

/** The inputs of a fixed version (null: not fixed, or not read yet; false: that version does not exist). */
function usePinnedInputs(workflowId: string, version: number | undefined): string[] | null | false {
  const [inputs, setInputs] = useState<string[] | null | false>(null);
  useEffect(() => {
    setInputs(null);
    if (!workflowId || version === undefined) return;
    let live = true;
    workflows
      .version(workflowId, version)
      .then((w) => live && setInputs(w.inputs ?? []))
      .catch(() => live && setInputs(false));
    return () => {
      live = false;
    };
  }, [workflowId, version]);
  return inputs;
}

function VersionSelect({
  config,
  versions,
  readOnly,
  setConfig,
}: {
  config: WorkflowConfig;
  versions: readonly VersionSummary[];
  readOnly: boolean;
  setConfig: (config: WorkflowConfig) => void;
}) {
  const known = versions.some((v) => v.version === config.version);
  return (
    <select
      className="input"
      value={config.version ?? ''}
      disabled={readOnly}
      aria-label="Version"
      data-testid="called-version"
      onChange={(e) => setConfig(e.target.value === '' ? withoutVersion(config) : { ...config, version: Number(e.target.value) })}
    >
      <option value="">Latest (when the node starts)</option>
      {config.version !== undefined && !known && <option value={config.version}>v{config.version}</option>}
      {versions.map((v) => (
        <option key={v.version} value={v.version}>
          v{v.version} · {v.title} · {formatTime(v.createdAt)}
        </option>
      ))}
    </select>
  );
}

export function WorkflowForm({
  node,
  setConfig,
  paths,
  readOnly,
  problemAt,
  currentWorkflowId = null,
}: FormProps<'workflow'> & { currentWorkflowId?: string | null }) {
  const config = node.data.config;
  const { workflowId, input } = config;
  const [picking, setPicking] = useState(false);
  const target = useTarget(workflowId);
  const pinned = usePinnedInputs(workflowId, config.version);

  const choose = (w: WorkflowSummary) => {
    rememberWorkflowTitle(w.id, w.title);
    setPicking(false);
    if (w.id === workflowId) return;
    // One config change (one undo step) once the inputs of the picked workflow are known.
    void workflows
      .get(w.id)
      .then((full) => full.inputs ?? [])
      .catch(() => [] as string[])
      .then((names) => setConfig({ workflowId: w.id, input: inputFor(names, input) }));
  };

  const latestInputs = target.state === 'ok' ? (target.workflow.inputs ?? []) : [];
  const inputs = config.version !== undefined && pinned ? pinned : latestInputs;
  const extras = Object.fromEntries(Object.entries(input).filter(([name]) => !inputs.includes(name)));
  const named = Object.fromEntries(Object.entries(input).filter(([name]) => inputs.includes(name)));
  const setArg = (name: string, value: string) => setConfig({ ...config, input: { ...input, [name]: value } }, `input:${node.id}:${name}`);
  const addKey = () => {
    let n = 1;
    while (Object.hasOwn(input, `param${n}`)) n++;
    setConfig({ ...config, input: { ...input, [`param${n}`]: '' } });
  };
  const showPicker = !readOnly && (picking || !workflowId || target.state === 'missing');
  const idError = problemAt('config.workflowId');

  return (
    <>
      <div className={`field${idError ? ' has-error' : ''}`}>
        <span className="field__label">Workflow</span>
        {workflowId && target.state === 'loading' && <span className="muted small">Loading the workflow…</span>}
        {target.state === 'ok' && !picking && (
          <div className="query-picker__chosen" data-testid="workflow-chosen" data-workflow-id={workflowId}>
            <strong>{target.workflow.title || workflowId}</strong>
            <Link className="small" to={`/workflows/${encodeURIComponent(workflowId)}`} target="_blank" rel="noreferrer" data-testid="workflow-open">
              Open workflow
            </Link>
            <span className="spacer" />
            {!readOnly && (
              <button type="button" className="btn btn--small btn--ghost" onClick={() => setPicking(true)} data-testid="workflow-change">
                Change
              </button>
            )}
          </div>
        )}
        {workflowId && workflowId === currentWorkflowId && (
          <span className="field__hint" data-testid="workflow-self">
            This node calls the workflow it is in: each run starts another one, up to the nesting limit (10)
            or the runs one tree may hold (FLOWDECK_MAX_TREE_RUNS, 1,000 by default).
          </span>
        )}
        {target.state === 'missing' && (
          <span className="field__error" data-testid="workflow-missing">
            The workflow {workflowId} does not exist (any more): pick another.
          </span>
        )}
        {target.state === 'error' && <span className="field__error">Could not read workflow {workflowId}: {target.message}</span>}
        {showPicker && (
          <WorkflowPicker
            currentWorkflowId={currentWorkflowId}
            onPick={choose}
            onCancel={picking && target.state === 'ok' ? () => setPicking(false) : null}
            onTypeId={(id) => setConfig({ ...withoutVersion(config), workflowId: id }, `workflow-id:${node.id}`)}
          />
        )}
        {idError && <span className="field__error">{idError}</span>}
      </div>
      {target.state === 'ok' && (
        <Field
          label="Version"
          error={problemAt('config.version') ?? (pinned === false ? `Version ${config.version} of this workflow does not exist.` : undefined)}
          hint="A fixed version keeps running the same graph when the called workflow is saved again."
        >
          <VersionSelect config={config} versions={target.versions} readOnly={readOnly} setConfig={setConfig} />
        </Field>
      )}
      {workflowId && target.state !== 'missing' && (
        <div className={`field${problemAt('config.input') ? ' has-error' : ''}`} data-testid="workflow-args">
          <span className="field__label">Arguments (its ctx.input)</span>
          {target.state === 'ok' && inputs.length === 0 && <span className="muted small">This workflow reads no input.</span>}
          {inputs.map((name) => (
            <label className="kv__row" key={name}>
              <span className="mono kv__key">{name}</span>
              <TemplateInput
                value={own(named, name) ?? ''}
                onChange={(value) => setArg(name, value)}
                paths={paths}
                placeholder="{{ ctx.input.id }}"
                readOnly={readOnly}
                ariaLabel={`value of ${name}`}
                testId={`workflow-arg-${name}`}
              />
            </label>
          ))}
          {Object.keys(extras).length > 0 && (
            <>
              <span className="muted small">{inputs.length > 0 || target.state !== 'ok' ? 'Other keys of its input' : 'Keys of its input'}</span>
              <KeyValueEditor
                entries={extras}
                onChange={(next) => setConfig({ ...config, input: { ...named, ...next } }, `input:${node.id}`)}
                paths={paths}
                keyPlaceholder="name"
                testId="workflow-arg-extra"
                readOnly={readOnly}
              />
            </>
          )}
          {Object.keys(extras).length === 0 && !readOnly && (
            <button type="button" className="btn btn--small btn--ghost" onClick={addKey} data-testid="workflow-arg-add">
              + Add another key
            </button>
          )}
          {problemAt('config.input') ? (
            <span className="field__error">{problemAt('config.input')}</span>
          ) : (
            <span className="field__hint">Templates, resolved when the node starts; the called run reads them as ctx.input.</span>
          )}
        </div>
      )}
    </>
  );
}
