/** The editor's dialogs: save conflict, execute, leave guard, keyboard help. */
import { useState } from 'react';

import { describeBinding, SHORTCUTS } from './shortcuts';
import { priorityError } from './settings/flowControl';
import { Field, NumberInput } from './inspector/fields';
import { CodeEditor } from './inspector/LazyCodeEditor';
import { parseJsonInput } from './useTestRun';
import { Modal } from '../shared/ui/Modal';

export function ConflictDialog({
  latest,
  onReload,
  onOverwrite,
  onClose,
}: {
  latest: number | null;
  onReload: () => void;
  onOverwrite: () => void;
  onClose: () => void;
}) {
  return (
    <Modal
      title="Saved elsewhere"
      onClose={onClose}
      testId="conflict-dialog"
      footer={
        <>
          <button type="button" className="btn" onClick={onReload} data-testid="conflict-reload">
            Reload (discard my changes)
          </button>
          <button type="button" className="btn btn--danger" onClick={onOverwrite} data-testid="conflict-overwrite">
            Overwrite with my version
          </button>
        </>
      }
    >
      <p>
        Someone (maybe you, in another tab) saved this workflow{latest ? ` as version ${latest}` : ''} after you opened it. Reload to
        see their version, or overwrite it with yours (theirs stays in the version history).
      </p>
    </Modal>
  );
}

export function ExecuteDialog({
  version,
  dirty,
  initialInput,
  onExecute,
  onClose,
}: {
  version: number;
  dirty: boolean;
  initialInput: string;
  onExecute: (input: unknown, priority?: number) => void;
  onClose: () => void;
}) {
  const [text, setText] = useState(initialInput);
  const [error, setError] = useState<string | null>(null);
  const [priority, setPriority] = useState<number | undefined>(undefined);
  const badPriority = priorityError(priority);
  const submit = () => {
    const parsed = parseJsonInput(text);
    if (!parsed.ok) setError(parsed.error);
    else if (!badPriority) onExecute(parsed.value, priority);
  };
  return (
    <Modal
      title={`Execute version ${version}`}
      onClose={onClose}
      testId="execute-dialog"
      footer={
        <>
          <button type="button" className="btn btn--ghost" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="btn btn--primary" onClick={submit} data-testid="execute-confirm">
            ⚡ Execute
          </button>
        </>
      }
    >
      <p>A production run of the saved version {version}. Pinned data is not used.</p>
      {dirty && <p className="warning-box">You have unsaved changes: they are not part of this run. Save first to include them.</p>}
      <div className="field__label">Input (JSON)</div>
      <CodeEditor language="json" value={text} onChange={setText} testId="execute-input" minHeight={120} />
      {error && <div className="field__error">{error}</div>}
      <Field label="Priority" error={badPriority} hint="1–100; empty: the workflow's own (default 50). Orders runs queued by flow control">
        <NumberInput value={priority} min={1} max={100} step={1} placeholder="50" testId="execute-priority" onChange={setPriority} />
      </Field>
    </Modal>
  );
}

export function LeaveDialog({ onStay, onLeave }: { onStay: () => void; onLeave: () => void }) {
  return (
    <Modal
      title="Leave without saving?"
      onClose={onStay}
      testId="leave-dialog"
      footer={
        <>
          <button type="button" className="btn" onClick={onStay} data-testid="leave-stay">
            Stay
          </button>
          <button type="button" className="btn btn--danger" onClick={onLeave} data-testid="leave-confirm">
            Leave and discard
          </button>
        </>
      }
    >
      <p>This workflow has unsaved changes.</p>
    </Modal>
  );
}

export function HelpOverlay({ onClose }: { onClose: () => void }) {
  const mac = /Mac|iPhone|iPad/.test(navigator.platform);
  const groups = ['Workflow', 'Edit', 'Canvas'] as const;
  return (
    <Modal title="Keyboard shortcuts" onClose={onClose} testId="help-overlay" wide>
      <div className="shortcut-groups">
        {groups.map((g) => (
          <section key={g}>
            <h3 className="section-title">{g}</h3>
            <table className="shortcuts">
              <tbody>
                {SHORTCUTS.filter((s) => s.group === g).map((s) => (
                  <tr key={s.id} data-testid={`shortcut-${s.id}`}>
                    <td>{s.description}</td>
                    <td className="shortcuts__keys">
                      {s.bindings.map((b, i) => (
                        <kbd key={i}>{describeBinding(b, mac)}</kbd>
                      ))}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        ))}
        <section>
          <h3 className="section-title">Mouse</h3>
          <table className="shortcuts">
            <tbody>
              <tr>
                <td>Select several nodes</td>
                <td className="shortcuts__keys">
                  <kbd>Shift</kbd>+drag, <kbd>{mac ? '⌘' : 'Ctrl'}</kbd>+click
                </td>
              </tr>
              <tr>
                <td>Connect</td>
                <td className="shortcuts__keys">drag from an output handle to a node’s input</td>
              </tr>
              <tr>
                <td>Pan / zoom</td>
                <td className="shortcuts__keys">drag the background / wheel</td>
              </tr>
            </tbody>
          </table>
        </section>
      </div>
    </Modal>
  );
}
