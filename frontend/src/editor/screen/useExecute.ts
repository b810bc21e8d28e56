/** Execute: the dialog that asks for the input, then a production run of the saved version (its page opens). */
import { useCallback, useState } from 'react';
import { useNavigate } from 'react-router';

import { workflows } from '../../api/endpoints';
import { errorMessage, toast } from '../../shared/toasts';

export type ExecuteControls = { dialogOpen: boolean; openDialog: () => void; closeDialog: () => void; execute: (input: unknown, priority?: number) => Promise<void> };

export function useExecute(workflowId: string): ExecuteControls {
  const navigate = useNavigate();
  const [dialogOpen, setDialogOpen] = useState(false);
  const execute = useCallback(
    async (input: unknown, priority?: number) => {
      try {
        const { instanceId } = await workflows.execute(workflowId, input, priority);
        setDialogOpen(false);
        toast('success', 'Production run started.');
        navigate(`/runs/${instanceId}`);
      } catch (err) {
        toast('error', `Could not start the run: ${errorMessage(err)}`);
      }
    },
    [workflowId, navigate],
  );
  const openDialog = useCallback(() => setDialogOpen(true), []);
  const closeDialog = useCallback(() => setDialogOpen(false), []);
  return { dialogOpen, openDialog, closeDialog, execute };
}
