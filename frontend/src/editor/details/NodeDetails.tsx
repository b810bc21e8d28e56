/**
 * The node details view (n8n's NDV): a large overlay with what the node received, its parameters and what it
 * returned side by side, for the run the page shows (the last test run in the editor, the run on a run page),
 * per loop iteration and per attempt. Keys on the input side drag into the template fields of the
 * parameters (or Enter writes them into the field last used). Escape closes it; focus stays inside.
 */
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent, type FocusEvent, type KeyboardEvent } from 'react';

import { knownPaths, loopBodies } from '../../graph/context';
import { DEFAULT_RETRY, NODE_TYPE_INFO, type EditorNode } from '../../graph/model';
import { attemptLabel, attemptPlace, displayStatus, leadIteration, type NodeRun } from '../../runs/runReducer';
import { formatDuration } from '../../shared/format';
import { StatusBadge } from '../../shared/ui/StatusBadge';
import { TruncatedOutput } from '../../shared/ui/TruncatedOutput';
import { problemLookup } from '../inspector/forms';
import { ConfigForm } from '../inspector/NodeInspector';
import { PinEditor } from '../inspector/RunDataTab';
import { PreviewContext } from '../inspector/TemplatePreview';
import { useEditor, useEditorStoreApi } from '../storeContext';
import { DataView, type ViewMode } from './DataView';
import { insertIntoField, PATH_MIME, templateField } from './fieldInsert';
import { orderedKeys } from './paths';
import { useNodeDetail, type NodeDetail } from './useNodeDetail';
import './details.css';

function stable(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stable(v)}`).join(',')}}`;
}

/** The iteration a body node opens on: the one deciding its status (the first failed), else its last. */
function leadKey(nodeRun: NodeRun | undefined): string | null {
  const iterations = Object.entries(nodeRun?.iterations ?? {});
  const lead = nodeRun ? leadIteration(nodeRun) : null;
  return iterations.find(([, it]) => it === lead)?.[0] ?? iterations[iterations.length - 1]?.[0] ?? null;
}

/** Keep Tab and Shift+Tab inside `root`. */
function trapTab(e: KeyboardEvent, root: HTMLElement | null) {
  if (e.key !== 'Tab' || !root) return;
  const focusable = [...root.querySelectorAll<HTMLElement>('button, [href], input, select, textarea, [tabindex]:not([tabindex="-1"])')].filter(
    (el) => !el.hasAttribute('disabled') && el.offsetParent !== null,
  );
  const first = focusable[0];
  const last = focusable[focusable.length - 1];
  if (!first || !last) return;
  if (e.shiftKey && document.activeElement === first) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && document.activeElement === last) {
    e.preventDefault();
    first.focus();
  }
}

function InputSide({ detail, mode, onMode, onPick }: { detail: NodeDetail; mode: ViewMode; onMode: (m: ViewMode) => void; onPick: (path: string) => void }) {
  const [onlyRead, setOnlyRead] = useState(false);
  const reads = useMemo(() => (detail.reads ? new Set(detail.reads) : undefined), [detail.reads]);
  const shown = useMemo(() => {
    const ordered: Record<string, unknown> = {};
    for (const key of orderedKeys(detail.input, detail.reads ?? null)) {
      if (!onlyRead || !reads || reads.has(key)) ordered[key] = detail.input[key];
    }
    return ordered;
  }, [detail.input, detail.reads, onlyRead, reads]);
  const truncated = Object.entries(detail.inputTruncated ?? {});
  return (
    <>
      <p className="muted small" data-testid="ndv-reads">
        {detail.reads === null || detail.reads === undefined
          ? 'Its code may read any of these.'
          : detail.reads.length === 0
            ? 'It reads nothing from ctx.'
            : (
                <>
                  It reads{' '}
                  {detail.reads.map((r, i) => (
                    <span key={r}>
                      {i > 0 && ', '}
                      <code>ctx.{r}</code>
                    </span>
                  ))}
                  .
                </>
              )}
      </p>
      {reads && reads.size > 0 && (
        <label className="ndv-check">
          <input type="checkbox" checked={onlyRead} onChange={(e) => setOnlyRead(e.target.checked)} data-testid="ndv-only-read" /> only what it reads
        </label>
      )}
      <DataView value={shown} root="ctx" mode={mode} onMode={onMode} label="Input" testId="ndv-input" source={{ onPick }} reads={reads} />
      {truncated.map(([key, cut]) => (
        <p key={key} className="muted small" data-testid="ndv-input-truncated">
          <code>ctx.{key}</code> is too large to show ({cut.bytes.toLocaleString('en')} bytes)
          {cut.href && (
            <>
              :{' '}
              <a href={cut.href} target="_blank" rel="noreferrer">
                open it in full
              </a>
            </>
          )}
        </p>
      ))}
    </>
  );
}

function OutputSide({ detail, node, mode, onMode }: { detail: NodeDetail; node: EditorNode; mode: ViewMode; onMode: (m: ViewMode) => void }) {
  const variable = node.data.outputVariable || node.id;
  return (
    <>
      {detail.error && (
        <div className="error-box" data-testid="ndv-error">
          {detail.error}
        </div>
      )}
      {detail.pinned && <p className="muted small">A pinned output stood in for running the node.</p>}
      {detail.outputTruncated ? (
        <TruncatedOutput truncated={detail.outputTruncated} testId="ndv-output-truncated" />
      ) : (
        <DataView
          value={detail.output}
          root={`ctx.${variable}`}
          mode={mode}
          onMode={onMode}
          label="Output"
          testId="ndv-output"
          empty={detail.attempt === 0 ? 'it did not run' : 'no output'}
        />
      )}
      {detail.logs && (
        <>
          <h4 className="section-title">Logs</h4>
          <pre className="logs" data-testid="ndv-logs">
            {detail.logs}
          </pre>
        </>
      )}
    </>
  );
}

function Scopes({
  iterations,
  iteration,
  onIteration,
  detail,
  attempt,
  onAttempt,
  maxAttempts,
}: {
  iterations: [string, NodeRun][];
  iteration: string;
  onIteration: (key: string) => void;
  detail: NodeDetail | null;
  attempt: number | null;
  onAttempt: (attempt: number | null) => void;
  maxAttempts: number;
}) {
  const attempts = detail?.attempts ?? [];
  return (
    <div className="ndv-scopes">
      {iterations.length > 0 && (
        <label>
          Iteration{' '}
          <select className="input" value={iteration} onChange={(e) => onIteration(e.target.value)} data-testid="ndv-iteration">
            {iterations.map(([key, it]) => (
              <option key={key} value={key}>
                #{key} · {it.status.toLowerCase()}
              </option>
            ))}
          </select>
        </label>
      )}
      {attempts.length > 1 && (
        <label>
          Attempt{' '}
          <select
            className="input"
            value={String(attempt ?? detail?.attempt ?? '')}
            onChange={(e) => onAttempt(Number(e.target.value))}
            data-testid="ndv-attempt"
          >
            {attempts.map((a) => (
              <option key={a.attempt} value={a.attempt}>
                {attemptPlace(a, maxAttempts)} · {a.status.toLowerCase()}
                {a.startedAt !== null && a.completedAt !== null ? ` · ${formatDuration(a.completedAt - a.startedAt)}` : ''}
              </option>
            ))}
          </select>
        </label>
      )}
    </div>
  );
}

function DetailsDialog({ node }: { node: EditorNode }) {
  const store = useEditorStoreApi();
  const run = useEditor((s) => s.run);
  const nodes = useEditor((s) => s.nodes);
  const edges = useEditor((s) => s.edges);
  const readOnly = useEditor((s) => s.readOnly);
  const problems = useEditor((s) => s.problemIndex.byNode[node.id]);
  const nodeRun = run ? run.nodes[node.id] : undefined;
  const inBody = useMemo(() => [...loopBodies(nodes, edges).values()].some((body) => body.has(node.id)), [nodes, edges, node.id]);
  const iterations = useMemo(() => Object.entries(nodeRun?.iterations ?? {}), [nodeRun]);
  const [picked, setPicked] = useState<{ runId: string | null; iteration: string | null; attempt: number | null }>({ runId: null, iteration: null, attempt: null });
  const sameRun = picked.runId === (run?.runId ?? null);
  const iteration = (sameRun && picked.iteration !== null && iterations.some(([k]) => k === picked.iteration) ? picked.iteration : leadKey(nodeRun)) ?? '';
  const attempt = sameRun ? picked.attempt : null;
  const shownRun = iteration ? nodeRun?.iterations?.[iteration] : nodeRun;
  const readable = run !== null && (!inBody || iteration !== '');
  const revision = `${run?.status}|${shownRun?.status}|${shownRun?.attempt}`;
  const state = useNodeDetail(readable ? run.runId : null, node.id, iteration, attempt, revision);
  const detail = state.kind === 'loaded' ? state.detail : null;
  const [inputMode, setInputMode] = useState<ViewMode>('table');
  const [outputMode, setOutputMode] = useState<ViewMode>('json');
  const root = useRef<HTMLDivElement>(null);
  const lastField = useRef<HTMLInputElement | null>(null);
  const close = useCallback(() => store.getState().openDetails(null), [store]);

  useEffect(() => {
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    root.current?.focus();
    return () => before?.focus();
  }, []);

  const paths = useMemo(() => knownPaths(nodes, edges, node.id, { input: run?.input }), [nodes, edges, node.id, run?.input]);
  const info = NODE_TYPE_INFO[node.type];
  const status = detail?.status ?? (iteration ? shownRun?.status : displayStatus(nodeRun)) ?? null;
  const maxAttempts = node.data.retry?.maxAttempts ?? DEFAULT_RETRY.maxAttempts;
  const shownAttempt = detail?.attempts.find((a) => a.attempt === detail.attempt);
  const editedSince = detail !== null && stable(detail.config) !== stable(node.data.config);

  const onPick = (path: string) => {
    const field = lastField.current;
    if (field && field.isConnected) insertIntoField(field, path);
    else void navigator.clipboard?.writeText(`{{ ${path} }}`).catch(() => undefined);
  };
  const onDragOver = (e: DragEvent) => {
    if (e.dataTransfer.types.includes(PATH_MIME) && templateField(e.target)) {
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    }
  };
  const onDrop = (e: DragEvent) => {
    const field = templateField(e.target);
    const path = e.dataTransfer.getData(PATH_MIME);
    if (!field || !path) return;
    e.preventDefault();
    insertIntoField(field, path);
    lastField.current = field;
  };
  const onFocusField = (e: FocusEvent) => {
    const field = templateField(e.target);
    if (field) lastField.current = field;
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && !e.defaultPrevented) {
      e.stopPropagation();
      close();
    } else trapTab(e, root.current);
  };

  return (
    <div className="modal-backdrop ndv-backdrop" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div
        ref={root}
        className="modal ndv"
        role="dialog"
        aria-modal="true"
        aria-label={`${node.data.label || node.id}: node details`}
        tabIndex={-1}
        data-testid="node-details"
        data-node-id={node.id}
        onKeyDown={onKeyDown}
      >
        <header className="ndv__head" style={{ ['--accent' as string]: info.color }}>
          <span className="inspector__icon">{info.icon}</span>
          <div className="ndv__titles">
            <h2>{node.data.label || node.id}</h2>
            <span className="muted small">
              {info.title} · <code>{node.id}</code>
            </span>
          </div>
          {status && <StatusBadge status={status} testId="ndv-status" />}
          {shownRun && shownRun.attempt > 0 && (
            <span className="muted small" data-testid="ndv-attempt-label">
              {shownAttempt ? `attempt ${attemptPlace(shownAttempt, maxAttempts)}` : attemptLabel(shownRun, maxAttempts)}
            </span>
          )}
          <Scopes
            iterations={iterations}
            iteration={iteration}
            onIteration={(key) => setPicked({ runId: run?.runId ?? null, iteration: key, attempt: null })}
            detail={detail}
            attempt={attempt}
            onAttempt={(a) => setPicked({ runId: run?.runId ?? null, iteration, attempt: a })}
            maxAttempts={maxAttempts}
          />
          <span className="spacer" />
          <button type="button" className="icon-btn" aria-label="Close node details" onClick={close} data-testid="ndv-close">
            ×
          </button>
        </header>
        <div className="ndv__cols">
          <section className="ndv__col" aria-label="Input" data-testid="ndv-input-side">
            <h3 className="ndv__col-title">Input</h3>
            {detail ? (
              <InputSide detail={detail} mode={inputMode} onMode={setInputMode} onPick={onPick} />
            ) : (
              <NoData run={run !== null} state={state.kind} inBody={inBody} />
            )}
          </section>
          <section className="ndv__col ndv__col--params" aria-label="Parameters" data-testid="ndv-params" onDragOver={onDragOver} onDrop={onDrop} onFocus={onFocusField}>
            <h3 className="ndv__col-title">Parameters</h3>
            {editedSince && (
              <p className="banner banner--info small" data-testid="ndv-edited">
                Edited since this run: the data shown is from the parameters as they ran.
              </p>
            )}
            <PreviewContext.Provider value={detail ? detail.input : null}>
              <ConfigForm node={node} paths={paths} readOnly={readOnly} problemAt={problemLookup(problems)} />
            </PreviewContext.Provider>
          </section>
          <section className="ndv__col" aria-label="Output" data-testid="ndv-output-side">
            <h3 className="ndv__col-title">Output</h3>
            {detail ? <OutputSide detail={detail} node={node} mode={outputMode} onMode={setOutputMode} /> : <NoData run={run !== null} state={state.kind} inBody={inBody} />}
            {!readOnly && <PinEditor node={node} />}
          </section>
        </div>
      </div>
    </div>
  );
}

function NoData({ run, state, inBody }: { run: boolean; state: string; inBody: boolean }) {
  let text = 'Test run the workflow (Ctrl+Enter) to see what this node receives and returns.';
  if (run && state === 'loading') text = 'Loading…';
  else if (run && state === 'absent') text = 'This node was not in that run (it was added or renamed since).';
  else if (run && state === 'error') text = 'Could not read this node’s data.';
  else if (run && inBody) text = 'It did not run: its loop ran no iteration.';
  return (
    <p className="muted" data-testid="ndv-no-data">
      {text}
    </p>
  );
}

/** The details view of the store's `detailsNodeId`, when one is open. */
export function NodeDetails() {
  const node = useEditor((s) => (s.detailsNodeId ? s.nodes.find((n) => n.id === s.detailsNodeId) : undefined));
  return node ? <DetailsDialog key={node.id} node={node} /> : null;
}
