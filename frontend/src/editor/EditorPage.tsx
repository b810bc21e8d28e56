/** The editor screen: toolbar, palette, canvas, node panel, bottom panel; save, test run, execute, versions. */
import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import { lazy, Suspense, useCallback, useEffect, useMemo, useState } from 'react';
import { Link, useBlocker, useLocation, useNavigate, useParams, useSearchParams } from 'react-router';

import { ApiError } from '../api/client';
import { runs as runsApi, workflows } from '../api/endpoints';
import { preconnectRealtime } from '../api/realtime';
import type { VersionSummary, Workflow } from '../api/types';
import { TERMINAL_RUN_STATUSES } from '../api/types';
import { ancestors } from '../graph/connect';
import type { EditorEdge, EditorNode } from '../graph/model';
import { completedOutputs } from '../runs/runReducer';
import { formatTime } from '../shared/format';
import { errorMessage, toast } from '../shared/toasts';
import { BottomPanel, type BottomTab } from './BottomPanel';
import { useEditorActions } from './canvas/useEditorActions';
import { readClipboard, writeClipboard } from './clipboardStore';
import { ConflictDialog, ExecuteDialog, HelpOverlay, LeaveDialog } from './dialogs';
import { definitionJson, type EditorStore, type WorkflowMeta } from './editorStore';
import { EditorCanvas } from './EditorCanvas';
import { useLiveValidation, usePerWorkflowDrafts } from './hooks';
import { NodeInspector } from './inspector/NodeInspector';
import { FOCUS_PALETTE_EVENT, NodePalette } from './palette/NodePalette';
import { prefetchWorkflowOfLocation, takeArrivedWorkflow, takePrefetchedWorkflow } from './prefetch';
import { EditorStoreProvider, useEditor, useEditorStoreApi } from './storeContext';
import { useShortcuts } from './useShortcuts';
import { useLastTestRun } from './useLastTestRun';
import { useTestRun } from './useTestRun';
import { WorkflowJsonMenu } from './WorkflowJsonMenu';

// Settings (schedules, webhook) load on first open, in their own chunk with the cron library.
const SettingsPanel = lazy(() => import('./settings/SettingsPanel'));

// A full page load of /workflows/{id}: ask for the workflow now, while the session is being checked.
prefetchWorkflowOfLocation();

function metaOf(w: Workflow): WorkflowMeta {
  return { workflowId: w.id, version: w.version, title: w.title, description: w.description, options: w.options };
}

function VersionsMenu({ workflowId, current, onClose }: { workflowId: string; current: number; onClose: () => void }) {
  const [versions, setVersions] = useState<VersionSummary[] | null>(null);
  useEffect(() => {
    workflows
      .versions(workflowId)
      .then((page) => setVersions(page.items))
      .catch((err: unknown) => toast('error', `Could not list versions: ${errorMessage(err)}`));
  }, [workflowId]);
  return (
    <div className="popover" data-testid="versions-menu" onMouseLeave={onClose}>
      <div className="popover__title">Version history</div>
      {versions === null && <div className="muted small">Loading…</div>}
      {versions?.map((v) => (
        <Link
          key={v.version}
          to={`/workflows/${workflowId}/versions/${v.version}`}
          className={`popover__item${v.version === current ? ' is-current' : ''}`}
          data-testid={`version-${v.version}`}
          onClick={onClose}
        >
          <strong>v{v.version}</strong> <span className="truncate">{v.title}</span> <span className="muted small">{formatTime(v.createdAt)}</span>
        </Link>
      ))}
    </div>
  );
}

function useDirty(): boolean {
  return useEditor((s) => !s.readOnly && s.savedJson !== '' && definitionJson(s) !== s.savedJson);
}

function Toolbar({
  onSave,
  onTestRun,
  onStop,
  onExecute,
  onHelp,
  onSettings,
  settingsOpen,
  saving,
  starting,
}: {
  onSave: () => void;
  onTestRun: () => void;
  onStop: () => void;
  onExecute: () => void;
  onHelp: () => void;
  onSettings: () => void;
  settingsOpen: boolean;
  saving: boolean;
  starting: boolean;
}) {
  const store = useEditorStoreApi();
  const title = useEditor((s) => s.title);
  const version = useEditor((s) => s.version);
  const workflowId = useEditor((s) => s.workflowId);
  const readOnly = useEditor((s) => s.readOnly);
  const canUndo = useEditor((s) => s.history.past.length > 0);
  const canRedo = useEditor((s) => s.history.future.length > 0);
  const running = useEditor((s) => s.run !== null && !TERMINAL_RUN_STATUSES.has(s.run.status) && s.run.isTest);
  const errorCount = useEditor((s) => s.problems.filter((p) => p.severity !== 'warning').length);
  const dirty = useDirty();
  const [versionsOpen, setVersionsOpen] = useState(false);
  const flow = useReactFlow();
  const actions = useEditorActions();

  return (
    <div className="toolbar" data-testid="editor-toolbar">
      <input
        className="toolbar__title"
        value={title}
        placeholder="Untitled workflow"
        readOnly={readOnly}
        aria-label="Workflow title"
        data-testid="workflow-title"
        onChange={(e) => store.getState().setTitle(e.target.value)}
      />
      <span className="pill" data-testid="workflow-version">
        v{version}
      </span>
      {dirty && (
        <span className="unsaved" data-testid="unsaved-indicator" title="Unsaved changes">
          ● Unsaved changes
        </span>
      )}
      <span className="spacer" />
      {!readOnly && (
        <div className="btn-group">
          <button type="button" className="btn btn--icon" title="Undo (Ctrl+Z)" disabled={!canUndo} onClick={() => store.getState().undo()} data-testid="undo">
            ↶
          </button>
          <button type="button" className="btn btn--icon" title="Redo (Ctrl+Shift+Z)" disabled={!canRedo} onClick={() => store.getState().redo()} data-testid="redo">
            ↷
          </button>
          <button type="button" className="btn btn--icon" title="Auto-layout (Shift+L)" onClick={actions.layout} data-testid="auto-layout">
            ⊞
          </button>
          <button type="button" className="btn btn--icon" title="Add a sticky note (Shift+N)" onClick={actions.addNote} data-testid="add-note">
            ✎
          </button>
        </div>
      )}
      <button type="button" className="btn btn--icon" title="Zoom to fit (1)" onClick={() => void flow.fitView({ padding: 0.2, duration: 200 })} data-testid="fit-view">
        ⤢
      </button>
      {workflowId && (
        <div className="popover-anchor">
          <button type="button" className="btn" onClick={() => setVersionsOpen((o) => !o)} data-testid="versions-button">
            History
          </button>
          {versionsOpen && <VersionsMenu workflowId={workflowId} current={version} onClose={() => setVersionsOpen(false)} />}
        </div>
      )}
      <WorkflowJsonMenu />
      {workflowId && (
        <Link className="btn" to={`/runs?workflowId=${workflowId}`} data-testid="runs-link">
          Runs
        </Link>
      )}
      {workflowId && (
        <Link className="btn" to={`/workflows/${workflowId}/widgets`} data-testid="widgets-link">
          Widgets
        </Link>
      )}
      <button
        type="button"
        className={`btn${settingsOpen ? ' is-active' : ''}`}
        title="Workflow settings: title, timeouts, schedules, webhook (Ctrl+,)"
        aria-pressed={settingsOpen}
        onClick={onSettings}
        data-testid="settings-button"
      >
        ⚙ Settings
      </button>
      <button type="button" className="btn btn--icon" title="Keyboard shortcuts (?)" onClick={onHelp} data-testid="help-button">
        ?
      </button>
      {!readOnly && (
        <>
          {running ? (
            <button type="button" className="btn btn--danger" onClick={onStop} data-testid="stop-button">
              ■ Stop
            </button>
          ) : (
            <button
              type="button"
              className="btn btn--run"
              onClick={onTestRun}
              disabled={starting}
              title={errorCount > 0 ? `${errorCount} error(s) to fix first` : 'Test run the unsaved graph (Ctrl+Enter)'}
              data-testid="test-run-button"
            >
              ▶ Test run
            </button>
          )}
          <button type="button" className="btn" onClick={onExecute} disabled={!workflowId} title="Run the saved version in production" data-testid="execute-button">
            ⚡ Execute
          </button>
          <button type="button" className="btn btn--primary" onClick={onSave} disabled={saving || !dirty} data-testid="save-button">
            {saving ? 'Saving…' : 'Save'}
          </button>
        </>
      )}
    </div>
  );
}

function ReadOnlyBanner({ workflowId, version }: { workflowId: string; version: number }) {
  const navigate = useNavigate();
  return (
    <div className="banner" data-testid="readonly-banner">
      Viewing version {version} (read-only).
      <Link to={`/workflows/${workflowId}`} className="btn btn--small">
        Open the latest version
      </Link>
      <button type="button" className="btn btn--small" data-testid="restore-version" onClick={() => navigate(`/workflows/${workflowId}`, { state: { restoreVersion: version } })}>
        Restore this version
      </button>
    </div>
  );
}

function EditorScreen({ workflowId, viewVersion }: { workflowId: string; viewVersion: number | null }) {
  const store = useEditorStoreApi();
  const flow = useReactFlow<EditorNode, EditorEdge>();
  const navigate = useNavigate();
  const location = useLocation();
  const [search, setSearch] = useSearchParams();
  // When the prefetched workflow (prefetch.ts) has already arrived, the first render shows the graph:
  // no empty editor rendered and committed first, then the load effect, then the graph.
  const [loaded, setLoaded] = useState(() => {
    if (viewVersion !== null || (location.state as { restoreVersion?: number } | null)?.restoreVersion) return false;
    const arrived = takeArrivedWorkflow(workflowId);
    if (!arrived) return false;
    store.getState().load(metaOf(arrived), arrived);
    performance.mark('flowdeck:graph-loaded');
    return true;
  });
  const [loadError, setLoadError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [conflict, setConflict] = useState<{ latest: number | null } | null>(null);
  const [executing, setExecuting] = useState(false);
  const [help, setHelp] = useState(false);
  const [settingsOpen, setSettingsOpen] = useState(false);
  const [bottomTab, setBottomTab] = useState<BottomTab>('problems');
  const [bottomOpen, setBottomOpen] = useState(false);
  const [inputError, setInputError] = useState<string | null>(null);
  const readOnly = viewVersion !== null;
  const actions = useEditorActions();
  const inspectorOpen = useEditor((s) => s.inspectorNodeId !== null);
  const dirty = useDirty();

  // Settings and the node panel share the right side: opening a node closes the settings, and back.
  const toggleSettings = useCallback(() => {
    setSettingsOpen((open) => {
      if (!open) store.getState().openInspector(null);
      return !open;
    });
  }, [store]);
  useEffect(() => {
    if (inspectorOpen) setSettingsOpen(false);
  }, [inspectorOpen]);

  const onInputError = useCallback((message: string) => {
    setInputError(message);
    setBottomTab('input');
    setBottomOpen(true);
  }, []);
  const testRun = useTestRun(store, onInputError);
  useLastTestRun(store, workflowId, loaded && !readOnly, testRun.follow);

  const load = useCallback(async () => {
    setLoadError(null);
    try {
      const latest = (await takePrefetchedWorkflow(workflowId)) ?? (await workflows.get(workflowId));
      const shown = viewVersion !== null ? await workflows.version(workflowId, viewVersion) : latest;
      store.getState().load(viewVersion !== null ? metaOf(shown) : metaOf(latest), shown, { readOnly });
      performance.mark('flowdeck:graph-loaded');
      const restore = (location.state as { restoreVersion?: number } | null)?.restoreVersion;
      if (restore && viewVersion === null) {
        const old = await workflows.version(workflowId, restore);
        store.getState().replaceGraph(old);
        store.getState().updateWorkflow({ title: old.title, description: old.description, options: old.options });
        toast('info', `Version ${restore} restored into the editor: save to make it the latest.`);
        navigate(location.pathname, { replace: true, state: null });
      }
      setLoaded(true);
    } catch (err) {
      setLoadError(errorMessage(err));
    }
  }, [workflowId, viewVersion, readOnly, store, location.state, location.pathname, navigate]);

  useEffect(() => {
    if (!loaded) void load();
  }, [workflowId, viewVersion]);

  useLiveValidation(store, loaded);

  // Connect Socket.IO once the page is idle (after the canvas has rendered), ready for the first Test run.
  useEffect(() => {
    if (!loaded || readOnly) return;
    if (typeof window.requestIdleCallback === 'function') {
      const handle = window.requestIdleCallback(preconnectRealtime, { timeout: 1000 });
      return () => window.cancelIdleCallback(handle);
    }
    const timer = window.setTimeout(preconnectRealtime, 200);
    return () => window.clearTimeout(timer);
  }, [loaded, readOnly]);
  usePerWorkflowDrafts(store, workflowId, loaded && !readOnly);

  // "Debug in editor": a production run's outputs become pins.
  const debugRun = search.get('debug');
  useEffect(() => {
    if (!loaded || !debugRun) return;
    runsApi
      .get(debugRun)
      .then((detail) => {
        const ids = new Set(store.getState().nodes.map((n) => n.id));
        const outputs = Object.fromEntries(
          Object.entries(completedOutputs({ ...detail, runId: detail.instanceId, log: [] })).filter(([id]) => ids.has(id)),
        );
        store.getState().setPins({ ...store.getState().pins, ...outputs });
        // The run's input becomes the test input, so a test run replays it exactly.
        store.getState().setTestInput(JSON.stringify(detail.input ?? {}, null, 2));
        store.getState().dispatchRun({ kind: 'detail', detail });
        toast('success', `Loaded the input and ${Object.keys(outputs).length} node outputs of run ${debugRun.slice(0, 8)} as pins.`);
        setSearch({}, { replace: true });
      })
      .catch((err: unknown) => toast('error', `Could not load run ${debugRun}: ${errorMessage(err)}`));
  }, [loaded, debugRun, store, setSearch]);

  // Open the run panel when a run starts.
  const runId = useEditor((s) => s.run?.runId);
  useEffect(() => {
    if (runId) {
      setBottomTab('run');
      setBottomOpen(true);
    }
  }, [runId]);

  const save = useCallback(
    async (baseVersion?: number) => {
      const s = store.getState();
      if (s.readOnly) return;
      const definition = s.definition();
      const sent = definitionJson(s);
      setSaving(true);
      try {
        const saved = await workflows.save(workflowId, { ...definition, version: baseVersion ?? s.version });
        // Keep the fields as edited (the server may spell defaults out, e.g. a schedule's timezone), so a
        // save does not look like a change; edits made while saving stay unsaved.
        const now = store.getState();
        store.getState().markSaved({ ...metaOf(saved), title: now.title, description: now.description, options: now.options }, sent);
        toast('success', `Saved as version ${saved.version}.`);
      } catch (err) {
        if (err instanceof ApiError && err.status === 409) setConflict({ latest: err.latestVersion });
        else if (err instanceof ApiError && err.problems.length > 0) {
          store.getState().setProblems(err.problems);
          setBottomTab('problems');
          setBottomOpen(true);
          toast('error', `Not saved: ${err.problems.filter((p) => p.severity !== 'warning').length} error(s) to fix first.`);
        } else toast('error', `Not saved: ${errorMessage(err)}`);
      } finally {
        setSaving(false);
      }
    },
    [store, workflowId],
  );

  const execute = useCallback(
    async (input: unknown) => {
      try {
        const { instanceId } = await workflows.execute(workflowId, input);
        setExecuting(false);
        toast('success', 'Production run started.');
        navigate(`/runs/${instanceId}`);
      } catch (err) {
        toast('error', `Could not start the run: ${errorMessage(err)}`);
      }
    },
    [workflowId, navigate],
  );

  const testFromHere = useCallback(
    (nodeId: string) => {
      const s = store.getState();
      const outputs = completedOutputs(s.run);
      const upstream = ancestors(s.edges, nodeId);
      const pins = Object.fromEntries(upstream.filter((id) => id in outputs).map((id) => [id, outputs[id]]));
      const missing = upstream.filter((id) => !(id in outputs) && !(id in s.pins));
      if (missing.length > 0) toast('warning', `No output from the last run for ${missing.join(', ')}: they run again.`);
      void testRun.start(pins);
    },
    [store, testRun],
  );

  const copy = () => {
    const fragment = store.getState().copySelection();
    if (fragment) {
      writeClipboard(fragment);
      toast('info', `Copied ${fragment.nodes.length} node${fragment.nodes.length === 1 ? '' : 's'}.`);
    }
    return fragment;
  };

  const paste = () => {
    const fragment = readClipboard();
    if (!fragment || fragment.nodes.length === 0) return;
    const xs = fragment.nodes.map((n) => n.position?.x ?? 0);
    const ys = fragment.nodes.map((n) => n.position?.y ?? 0);
    const canvas = document.querySelector('[data-testid="canvas"]')?.getBoundingClientRect();
    const center = canvas ? flow.screenToFlowPosition({ x: canvas.left + canvas.width / 2, y: canvas.top + canvas.height / 2 }) : { x: 0, y: 0 };
    store.getState().paste(fragment, { x: Math.round(center.x - Math.min(...xs) - 100), y: Math.round(center.y - Math.min(...ys) - 40) });
  };

  const togglePin = () => {
    const s = store.getState();
    const id = s.inspectorNodeId ?? [...s.selectedIds()][0];
    if (!id) return;
    if (id in s.pins) {
      s.removePin(id);
      toast('info', `Unpinned ${id}.`);
    } else {
      const out = completedOutputs(s.run);
      if (id in out) {
        s.setPin(id, out[id]);
        toast('info', `Pinned the last output of ${id}.`);
      } else toast('warning', `${id} has no output from the last run to pin.`);
    }
  };

  const editable = !readOnly;
  useShortcuts({
    undo: editable ? () => store.getState().undo() : undefined,
    redo: editable ? () => store.getState().redo() : undefined,
    copy,
    cut: editable
      ? () => {
          if (copy()) store.getState().deleteSelection();
        }
      : undefined,
    paste: editable ? paste : undefined,
    duplicate: editable ? () => store.getState().duplicateSelection() : undefined,
    delete: editable ? () => store.getState().deleteSelection() : undefined,
    selectAll: () => store.getState().selectAll(),
    layout: editable ? actions.layout : undefined,
    searchNodes: editable ? () => window.dispatchEvent(new Event(FOCUS_PALETTE_EVENT)) : undefined,
    addNote: editable ? actions.addNote : undefined,
    fitView: () => void flow.fitView({ padding: 0.2, duration: 200 }),
    zoomIn: () => void flow.zoomIn({ duration: 150 }),
    zoomOut: () => void flow.zoomOut({ duration: 150 }),
    save: editable ? () => void save() : undefined,
    testRun: editable ? () => void testRun.start() : undefined,
    pin: editable ? togglePin : undefined,
    help: () => setHelp(true),
    settings: toggleSettings,
    escape: () => {
      setSettingsOpen(false);
      store.getState().clearSelection();
    },
  });

  // Leave guard: in-app navigation asks, closing the tab warns.
  const blocker = useBlocker(({ currentLocation, nextLocation }) => dirty && currentLocation.pathname !== nextLocation.pathname);
  useEffect(() => {
    if (!dirty) return;
    const onBeforeUnload = (e: BeforeUnloadEvent) => {
      e.preventDefault();
    };
    window.addEventListener('beforeunload', onBeforeUnload);
    return () => window.removeEventListener('beforeunload', onBeforeUnload);
  }, [dirty]);


  if (loadError) {
    return (
      <div className="page page--center">
        <div className="error-box">Could not open this workflow: {loadError}</div>
        <Link to="/" className="btn">
          Back to workflows
        </Link>
      </div>
    );
  }

  return (
    <div className="editor" data-testid="editor" data-loaded={loaded}>
      <Toolbar
        onSave={() => void save()}
        onTestRun={() => void testRun.start()}
        onStop={() => void testRun.stop()}
        onExecute={() => setExecuting(true)}
        onHelp={() => setHelp(true)}
        onSettings={toggleSettings}
        settingsOpen={settingsOpen}
        saving={saving}
        starting={testRun.starting}
      />
      {readOnly && viewVersion !== null && <ReadOnlyBanner workflowId={workflowId} version={viewVersion} />}
      <div className="editor__body">
        <NodePalette onAdd={actions.addNode} disabled={readOnly} />
        <div className="editor__main">
          <EditorCanvas />
          <BottomPanel
            tab={bottomTab}
            setTab={setBottomTab}
            open={bottomOpen}
            setOpen={setBottomOpen}
            inputError={inputError}
            onStop={() => void testRun.stop()}
            onRunAgain={() => void testRun.start()}
          />
        </div>
        {settingsOpen ? (
          <Suspense fallback={<aside className="inspector" data-testid="settings-loading" />}>
            <SettingsPanel onClose={() => setSettingsOpen(false)} />
          </Suspense>
        ) : (
          inspectorOpen && <NodeInspector onTestFromHere={testFromHere} />
        )}
      </div>
      {conflict && (
        <ConflictDialog
          latest={conflict.latest}
          onClose={() => setConflict(null)}
          onReload={() => {
            setConflict(null);
            void load();
          }}
          onOverwrite={() => {
            setConflict(null);
            if (conflict.latest) void save(conflict.latest);
          }}
        />
      )}
      {executing && (
        <ExecuteDialog
          version={store.getState().version}
          dirty={dirty}
          initialInput={store.getState().testInput}
          onExecute={(input) => void execute(input)}
          onClose={() => setExecuting(false)}
        />
      )}
      {help && <HelpOverlay onClose={() => setHelp(false)} />}
      {blocker.state === 'blocked' && <LeaveDialog onStay={() => blocker.reset()} onLeave={() => blocker.proceed()} />}
    </div>
  );
}

export function EditorPage() {
  const { workflowId, version } = useParams();
  const viewVersion = version ? Number(version) : null;
  const key = useMemo(() => `${workflowId ?? ''}@${version ?? 'latest'}`, [workflowId, version]);
  if (!workflowId) return null;
  return (
    <EditorStoreProvider key={key}>
      <ReactFlowProvider>
        <EditorScreen workflowId={workflowId} viewVersion={viewVersion} />
      </ReactFlowProvider>
    </EditorStoreProvider>
  );
}

export type { EditorStore };
