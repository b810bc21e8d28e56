/** "Import JSON": a workflow from a file or a paste, checked here for shape and by the server for the rest. */
import { useState } from 'react';

import { ApiError } from '../api/client';
import type { Problem } from '../api/types';
import type { DefinitionJson } from '../graph/convert';
import { errorMessage } from '../shared/toasts';
import { Modal } from '../shared/ui/Modal';
import { parseWorkflowJson } from './workflowJson';
import './workflows.css';

type Props = {
  title?: string;
  /** What importing does; a rejection (an ApiError with problems, say) is shown in the dialog. */
  onImport: (definition: DefinitionJson) => Promise<void>;
  onClose: () => void;
  confirmLabel?: string;
  hint?: string;
};

export function ImportDialog({ title = 'Import a workflow', onImport, onClose, confirmLabel = 'Import', hint }: Props) {
  const [text, setText] = useState('');
  const [fileName, setFileName] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [busy, setBusy] = useState(false);

  const readFile = async (file: File | undefined) => {
    if (!file) return;
    setFileName(file.name);
    setError(null);
    setProblems([]);
    try {
      setText(await file.text());
    } catch (err) {
      setError(`Could not read ${file.name}: ${errorMessage(err)}`);
    }
  };

  const submit = async () => {
    const parsed = parseWorkflowJson(text);
    setProblems([]);
    if (!parsed.ok) {
      setError(parsed.error);
      return;
    }
    setError(null);
    setBusy(true);
    try {
      await onImport(parsed.definition);
    } catch (err) {
      const errors = err instanceof ApiError ? err.problems.filter((p) => p.severity !== 'warning') : [];
      setProblems(errors);
      setError(
        errors.length > 0
          ? `The workflow has ${errors.length} problem${errors.length === 1 ? '' : 's'} to fix before it can be imported:`
          : `Not imported: ${errorMessage(err)}`,
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal
      title={title}
      onClose={onClose}
      testId="import-dialog"
      wide
      footer={
        <>
          <button type="button" className="btn btn--ghost" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" form="import-form" className="btn btn--primary" disabled={busy} data-testid="import-confirm">
            {busy ? 'Importing…' : confirmLabel}
          </button>
        </>
      }
    >
      <form
        id="import-form"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        {hint && <p className="muted small">{hint}</p>}
        <label className="field">
          <span className="field__label">From a file</span>
          <input type="file" accept=".json,application/json" onChange={(e) => void readFile(e.target.files?.[0])} data-testid="import-file" />
          {fileName && <span className="field__hint">Read {fileName}: check it below, or edit it.</span>}
        </label>
        <label className={`field${error ? ' has-error' : ''}`}>
          <span className="field__label">Or paste the JSON</span>
          <textarea
            className="input import-text"
            rows={14}
            spellCheck={false}
            value={text}
            placeholder='{"title": "…", "nodes": [...], "edges": [...]}'
            onChange={(e) => {
              setText(e.target.value);
              setError(null);
              setProblems([]);
            }}
            data-testid="import-text"
          />
        </label>
        {error && (
          <div className="error-box" role="alert" data-testid="import-error">
            {error}
            {problems.length > 0 && (
              <ul className="import-problems">
                {problems.map((p, i) => (
                  <li key={i}>
                    {p.nodeId ? <strong>{p.nodeId}: </strong> : null}
                    {p.message}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
      </form>
    </Modal>
  );
}
