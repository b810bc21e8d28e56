/** The editor's Export (the graph as it is now, unsaved edits included) and Import (replaces the graph: undo or save). */
import { useState } from 'react';

import { ApiError } from '../api/client';
import { workflows } from '../api/endpoints';
import type { DefinitionJson } from '../graph/convert';
import { toast } from '../shared/toasts';
import { ImportDialog } from '../workflows/ImportDialog';
import { downloadJson, exportable, fileNameFor } from '../workflows/workflowJson';
import { useEditor, useEditorStoreApi } from './storeContext';

export function WorkflowJsonMenu() {
  const store = useEditorStoreApi();
  const readOnly = useEditor((s) => s.readOnly);
  const [importing, setImporting] = useState(false);

  const exportJson = () => {
    const s = store.getState();
    downloadJson(fileNameFor(s.title), exportable(s.definition()));
  };

  const importJson = async (definition: DefinitionJson) => {
    const result = await workflows.validate(definition);
    const errors = result.problems.filter((p) => p.severity !== 'warning');
    if (errors.length > 0) throw new ApiError(400, 'the workflow is not valid', errors);
    const s = store.getState();
    s.replaceGraph(definition);
    s.updateWorkflow({
      title: definition.title?.trim() || s.title,
      description: definition.description ?? null,
      options: definition.options ?? null,
    });
    setImporting(false);
    toast('success', 'Imported into the editor: Save to keep it as a new version (Ctrl+Z undoes it).');
  };

  return (
    <>
      <div className="btn-group">
        <button type="button" className="btn" title="Download this workflow as JSON (unsaved edits included)" onClick={exportJson} data-testid="export-json">
          Export
        </button>
        {!readOnly && (
          <button type="button" className="btn" title="Replace this graph with a workflow JSON file or paste" onClick={() => setImporting(true)} data-testid="import-json">
            Import
          </button>
        )}
      </div>
      {importing && (
        <ImportDialog
          title="Import into this workflow"
          confirmLabel="Replace the graph"
          hint="The imported graph replaces the one in the editor; nothing is saved until you click Save."
          onImport={importJson}
          onClose={() => setImporting(false)}
        />
      )}
    </>
  );
}
