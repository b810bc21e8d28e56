/** The editor screen: toolbar, palette, canvas, node panel, bottom panel, and the dialogs; each job is a hook (screen/). */
import { ReactFlowProvider, useReactFlow } from '@xyflow/react';
import { lazy, Suspense, useCallback, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';

import type { EditorEdge, EditorNode } from '../graph/model';
import { useConfirm } from '../shared/ui/ConfirmDialog';
import { BottomPanel } from './BottomPanel';
import { useEditorActions } from './canvas/useEditorActions';
import { ConflictDialog, ExecuteDialog, HelpOverlay, LeaveDialog } from './dialogs';
import type { EditorStore } from './editorStore';
import { FIT_PADDING } from './canvas/viewport';
import { NodeDetails } from './details/NodeDetails';
import { useOpenDetailsKey } from './details/useOpenDetailsKey';
import { EditorCanvas } from './EditorCanvas';
import { ReadOnlyBanner, Toolbar, useDirty } from './EditorToolbar';
import { useLiveValidation, usePerWorkflowDrafts } from './hooks';
import { NodeInspector } from './inspector/NodeInspector';
import { FOCUS_PALETTE_EVENT, NodePalette } from './palette/NodePalette';
import { prefetchWorkflowOfLocation } from './prefetch';
import { useClipboard } from './screen/useClipboard';
import { useExecute } from './screen/useExecute';
import { useLeaveGuard } from './screen/useLeaveGuard';
import { usePanels } from './screen/usePanels';
import { usePins } from './screen/usePins';
import { useSave } from './screen/useSave';
import { useSavedElsewhere } from './screen/useSavedElsewhere';
import { useWorkflowLoad } from './screen/useWorkflowLoad';
import { EditorStoreProvider, useEditor, useEditorStoreApi } from './storeContext';
import { useShortcuts } from './useShortcuts';
import { useLastTestRun } from './useLastTestRun';
import { useTestRun } from './useTestRun';

// Settings (schedules, webhook) load on first open, in their own chunk with the cron library.
const SettingsPanel = lazy(() => import('./settings/SettingsPanel'));

// A full page load of /workflows/{id}: ask for the workflow now, while the session is being checked.
prefetchWorkflowOfLocation();

function EditorScreen({ workflowId, viewVersion }: { workflowId: string; viewVersion: number | null }) {
  const store = useEditorStoreApi();
  const flow = useReactFlow<EditorNode, EditorEdge>();
  const readOnly = viewVersion !== null;
  const editable = !readOnly;
  const actions = useEditorActions();
  const dirty = useDirty();
  const layoutsDone = useEditor((s) => s.layoutsDone);
  const panels = usePanels(store);
  const { showBottom } = panels;
  const [help, setHelp] = useState(false);
  const [inputError, setInputError] = useState<string | null>(null);

  const { loaded, loadError, reload, restore } = useWorkflowLoad(store, workflowId, viewVersion);
  const [confirm, confirmDialog] = useConfirm();
  const discardOk = async (title: string) =>
    !dirty ||
    confirm({ title, message: 'Your unsaved changes here are dropped.', confirmLabel: 'Drop my changes', danger: true });
  const restoreVersion = async (version: number) => {
    if (await discardOk(`Restore version ${version}?`)) await restore(version);
  };
  const onInputError = useCallback(
    (message: string) => {
      setInputError(message);
      showBottom('input');
    },
    [showBottom],
  );
  const testRun = useTestRun(store, onInputError);
  useLastTestRun(store, workflowId, loaded && editable, testRun.follow);
  useLiveValidation(store, loaded);
  usePerWorkflowDrafts(store, workflowId, loaded && editable);
  const onProblems = useCallback(() => showBottom('problems'), [showBottom]);
  const { saving, conflict, save, closeConflict } = useSave(store, workflowId, onProblems);
  const elsewhere = useSavedElsewhere(workflowId, loaded && editable, saving);
  const execute = useExecute(workflowId);
  const pins = usePins(store, loaded, testRun);
  const clipboard = useClipboard(store);
  const blocker = useLeaveGuard(dirty);
  useOpenDetailsKey(store);

  useShortcuts({
    undo: editable ? () => store.getState().undo() : undefined,
    redo: editable ? () => store.getState().redo() : undefined,
    copy: clipboard.copy,
    cut: editable ? clipboard.cut : undefined,
    paste: editable ? clipboard.paste : undefined,
    duplicate: editable ? () => store.getState().duplicateSelection() : undefined,
    delete: editable ? () => store.getState().deleteSelection() : undefined,
    selectAll: () => store.getState().selectAll(),
    layout: editable ? actions.layout : undefined,
    searchNodes: editable ? () => window.dispatchEvent(new Event(FOCUS_PALETTE_EVENT)) : undefined,
    addNote: editable ? actions.addNote : undefined,
    fitView: () => void flow.fitView({ padding: FIT_PADDING, duration: 200 }),
    zoomIn: () => void flow.zoomIn({ duration: 150 }),
    zoomOut: () => void flow.zoomOut({ duration: 150 }),
    save: editable ? () => void save() : undefined,
    testRun: editable ? () => void testRun.start() : undefined,
    pin: editable ? pins.togglePin : undefined,
    help: () => setHelp(true),
    settings: panels.toggleSettings,
    escape: () => {
      panels.closeSettings();
      store.getState().clearSelection();
    },
  });

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
    <div className="editor" data-testid="editor" data-loaded={loaded} data-layouts-done={layoutsDone}>
      {confirmDialog}
      <Toolbar
        onSave={(message) => void save(undefined, message)}
        onTestRun={() => void testRun.start()}
        onStop={() => void testRun.stop()}
        onExecute={execute.openDialog}
        onHelp={() => setHelp(true)}
        onSettings={panels.toggleSettings}
        onRestore={(v) => void restoreVersion(v)}
        settingsOpen={panels.settingsOpen}
        saving={saving}
        starting={testRun.starting}
      />
      {readOnly && viewVersion !== null && <ReadOnlyBanner workflowId={workflowId} version={viewVersion} />}
      {elsewhere.notice && (
        <div className="banner" role="status" data-testid="saved-elsewhere" data-version={elsewhere.notice.version}>
          Version {elsewhere.notice.version} was just saved in another tab or by someone else
          {elsewhere.notice.author ? ` (${elsewhere.notice.author}` : ''}
          {elsewhere.notice.author && elsewhere.notice.message ? `: “${elsewhere.notice.message}”)` : elsewhere.notice.author ? ')' : ''}.
          {dirty ? ' Saving here now would conflict with it.' : ''}
          <button
            type="button"
            className="btn btn--small"
            data-testid="saved-elsewhere-reload"
            onClick={() =>
              void discardOk(`Open version ${elsewhere.notice?.version ?? ''}?`).then((ok) => {
                if (ok) void reload();
              })
            }
          >
            Open it
          </button>
          <button type="button" className="btn btn--small btn--ghost" data-testid="saved-elsewhere-dismiss" onClick={elsewhere.dismiss}>
            Keep editing
          </button>
        </div>
      )}
      <div className="editor__body">
        <NodePalette onAdd={actions.addNode} disabled={readOnly} />
        <div className="editor__main">
          <EditorCanvas />
          <BottomPanel
            tab={panels.bottomTab}
            setTab={panels.setBottomTab}
            open={panels.bottomOpen}
            setOpen={panels.setBottomOpen}
            inputError={inputError}
            onStop={() => void testRun.stop()}
            onRunAgain={() => void testRun.start()}
          />
        </div>
        {panels.settingsOpen ? (
          <Suspense fallback={<aside className="inspector" data-testid="settings-loading" />}>
            <SettingsPanel onClose={panels.closeSettings} />
          </Suspense>
        ) : (
          panels.inspectorOpen && <NodeInspector onTestFromHere={pins.testFromHere} />
        )}
      </div>
      {conflict && (
        <ConflictDialog
          latest={conflict.latest}
          onClose={closeConflict}
          onReload={() => {
            closeConflict();
            void reload();
          }}
          onOverwrite={() => {
            closeConflict();
            if (conflict.latest) void save(conflict.latest);
          }}
        />
      )}
      {execute.dialogOpen && (
        <ExecuteDialog
          version={store.getState().version}
          dirty={dirty}
          initialInput={store.getState().testInput}
          onExecute={(input, priority) => void execute.execute(input, priority)}
          onClose={execute.closeDialog}
        />
      )}
      <NodeDetails />
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
