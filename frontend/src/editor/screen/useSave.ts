/** Save with optimistic concurrency: a 409 opens the conflict choice (reload, or overwrite the newer version). */
import { useCallback, useState } from 'react';

import { ApiError } from '../../api/client';
import { workflows } from '../../api/endpoints';
import type { Problem } from '../../api/types';
import { errorMessage, toast } from '../../shared/toasts';
import { definitionJson, type EditorStore } from '../editorStore';
import { metaOf } from './useWorkflowLoad';

export type SaveControls = {
  saving: boolean;
  /** The newer version a save ran into (a 409), while the user chooses. */
  conflict: { latest: number | null } | null;
  /** `message`: said about the new version (the version history shows it, with its author). */
  save: (baseVersion?: number, message?: string) => Promise<void>;
  closeConflict: () => void;
};

export function useSave(store: EditorStore, workflowId: string, onProblems: (problems: Problem[]) => void): SaveControls {
  const [saving, setSaving] = useState(false);
  const [conflict, setConflict] = useState<{ latest: number | null } | null>(null);

  const save = useCallback(
    async (baseVersion?: number, message?: string) => {
      const s = store.getState();
      if (s.readOnly) return;
      const definition = s.definition();
      const sent = definitionJson(s);
      setSaving(true);
      try {
        const note = message?.trim() ? { versionMessage: message.trim() } : {};
        const saved = await workflows.save(workflowId, { ...definition, version: baseVersion ?? s.version, ...note });
        // Keep the fields as edited (the server may spell defaults out, e.g. a schedule's timezone), so a
        // save does not look like a change; edits made while saving stay unsaved.
        const now = store.getState();
        store.getState().markSaved({ ...metaOf(saved), title: now.title, description: now.description, options: now.options }, sent);
        toast('success', `Saved as version ${saved.version}.`);
      } catch (err) {
        if (err instanceof ApiError && err.status === 409) setConflict({ latest: err.latestVersion });
        else if (err instanceof ApiError && err.problems.length > 0) {
          store.getState().setProblems(err.problems);
          onProblems(err.problems);
          toast('error', `Not saved: ${err.problems.filter((p) => p.severity !== 'warning').length} error(s) to fix first.`);
        } else toast('error', `Not saved: ${errorMessage(err)}`);
      } finally {
        setSaving(false);
      }
    },
    [store, workflowId, onProblems],
  );

  const closeConflict = useCallback(() => setConflict(null), []);
  return { saving, conflict, save, closeConflict };
}
