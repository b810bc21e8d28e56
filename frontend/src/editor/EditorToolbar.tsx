/** The editor's toolbar (title, undo, layout, history, save, test run, execute) and the read-only banner of a version. */
import { useReactFlow } from '@xyflow/react';
import { useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router';

import { workflows } from '../api/endpoints';
import type { VersionSummary } from '../api/types';
import { TERMINAL_RUN_STATUSES } from '../api/types';
import { formatTime } from '../shared/format';
import { errorMessage, toast } from '../shared/toasts';
import { useEditorActions } from './canvas/useEditorActions';
import { definitionJson } from './editorStore';
import { useEditor, useEditorStoreApi } from './storeContext';
import { VersionDiffDialog } from './VersionDiffDialog';
import { WorkflowJsonMenu } from './WorkflowJsonMenu';

function VersionsMenu({
  workflowId,
  current,
  onClose,
  onCompare,
}: {
  workflowId: string;
  current: number;
  onClose: () => void;
  onCompare: (versions: VersionSummary[], pair: [number, number]) => void;
}) {
  const [versions, setVersions] = useState<VersionSummary[] | null>(null);
  useEffect(() => {
    workflows
      .versions(workflowId)
      .then((page) => setVersions(page.items))
      .catch((err: unknown) => toast('error', `Could not list versions: ${errorMessage(err)}`));
  }, [workflowId]);
  return (
    <div className="popover popover--versions" data-testid="versions-menu" onMouseLeave={onClose}>
      <div className="popover__title">Version history</div>
      {versions === null && <div className="muted small">Loading…</div>}
      {versions?.map((v, i) => {
        const previous = versions[i + 1];
        return (
          <div key={v.version} className="version-item">
            <Link
              to={`/workflows/${workflowId}/versions/${v.version}`}
              className={`popover__item${v.version === current ? ' is-current' : ''}`}
              data-testid={`version-${v.version}`}
              onClick={onClose}
            >
              <strong>v{v.version}</strong> <span className="truncate">{v.message || v.title}</span>
              <span className="muted small" data-testid="version-meta">
                {formatTime(v.createdAt)}
                {v.author ? ` · ${v.author}` : ''}
              </span>
            </Link>
            {previous && (
              <button
                type="button"
                className="btn btn--small btn--ghost"
                title={`What changed from v${previous.version} to v${v.version}`}
                data-testid={`version-compare-${v.version}`}
                onClick={() => {
                  onCompare(versions, [previous.version, v.version]);
                  onClose();
                }}
              >
                Diff
              </button>
            )}
          </div>
        );
      })}
    </div>
  );
}

/** "What changed?": the message saved with the new version. */
function SaveMessage({ onSave, onClose }: { onSave: (message: string) => void; onClose: () => void }) {
  const [text, setText] = useState('');
  return (
    <form
      className="popover popover--right"
      data-testid="save-message"
      onSubmit={(e) => {
        e.preventDefault();
        onSave(text);
      }}
      onKeyDown={(e) => {
        if (e.key === 'Escape') {
          e.stopPropagation();
          onClose();
        }
      }}
    >
      <label className="field">
        <span className="field__label">What changed? (kept with the version)</span>
        <input className="input" autoFocus maxLength={500} value={text} onChange={(e) => setText(e.target.value)} data-testid="save-message-input" />
      </label>
      <button type="submit" className="btn btn--primary btn--small" data-testid="save-message-confirm">
        Save
      </button>
    </form>
  );
}

export function useDirty(): boolean {
  return useEditor((s) => !s.readOnly && s.savedJson !== '' && definitionJson(s) !== s.savedJson);
}

export function Toolbar({
  onSave,
  onTestRun,
  onStop,
  onExecute,
  onHelp,
  onSettings,
  onRestore,
  settingsOpen,
  saving,
  starting,
}: {
  onSave: (message?: string) => void;
  onTestRun: () => void;
  onStop: () => void;
  onExecute: () => void;
  onHelp: () => void;
  onSettings: () => void;
  onRestore: (version: number) => void;
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
  const [messageOpen, setMessageOpen] = useState(false);
  const [comparing, setComparing] = useState<{ versions: VersionSummary[]; pair: [number, number] } | null>(null);
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
          {versionsOpen && (
            <VersionsMenu
              workflowId={workflowId}
              current={version}
              onClose={() => setVersionsOpen(false)}
              onCompare={(versions, pair) => setComparing({ versions, pair })}
            />
          )}
          {comparing && (
            <VersionDiffDialog
              workflowId={workflowId}
              versions={comparing.versions}
              initial={comparing.pair}
              onClose={() => setComparing(null)}
              onRestore={(v) => {
                setComparing(null);
                onRestore(v);
              }}
            />
          )}
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
          <div className="btn-group popover-anchor">
            <button type="button" className="btn btn--primary" onClick={() => onSave()} disabled={saving || !dirty} data-testid="save-button">
              {saving ? 'Saving…' : 'Save'}
            </button>
            <button
              type="button"
              className="btn btn--primary btn--icon"
              title="Save with a message"
              aria-label="Save with a message"
              aria-expanded={messageOpen}
              disabled={saving || !dirty}
              onClick={() => setMessageOpen((o) => !o)}
              data-testid="save-with-message"
            >
              ▾
            </button>
            {messageOpen && (
              <SaveMessage
                onSave={(message) => {
                  setMessageOpen(false);
                  onSave(message);
                }}
                onClose={() => setMessageOpen(false)}
              />
            )}
          </div>
        </>
      )}
    </div>
  );
}

export function ReadOnlyBanner({ workflowId, version }: { workflowId: string; version: number }) {
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
