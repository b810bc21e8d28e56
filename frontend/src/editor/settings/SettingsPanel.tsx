/**
 * Workflow settings, a side panel in place of the node inspector: title, description, run timeout and SLA,
 * flow control, schedules, the webhook and the notifications. Edits go through the editor store (undo/redo, unsaved indicator, Save).
 * It reads only the workflow's own fields and the problems, never the graph, so it costs nothing while
 * nodes move or a run updates.
 */
import { useMemo } from 'react';

import { Field, NumberInput } from '../inspector/fields';
import { useEditor, useEditorShallow, useEditorStoreApi } from '../storeContext';
import { formatDuration, numberOption, secondsError, settingsProblems, withOption } from './options';
import { FlowControlSection } from './FlowControlSection';
import { ScheduleEditor } from './ScheduleEditor';
import { NotificationSection } from './NotificationSection';
import { WebhookLabels } from './WebhookLabels';
import { WebhookSection } from './WebhookSection';

export default function SettingsPanel({ onClose }: { onClose: () => void }) {
  const store = useEditorStoreApi();
  const { title, description, options, readOnly, workflowId } = useEditorShallow((s) => ({
    title: s.title,
    description: s.description,
    options: s.options,
    readOnly: s.readOnly,
    workflowId: s.workflowId,
  }));
  const problems = useEditor((s) => s.problems);
  const byPath = useMemo(() => settingsProblems(problems), [problems]);
  const timeout = numberOption(options, 'timeoutSeconds');
  const sla = numberOption(options, 'slaSeconds');
  const setNumber = (key: 'timeoutSeconds' | 'slaSeconds', value: number | undefined) =>
    store.getState().updateWorkflow({ options: withOption(store.getState().options, key, value) }, `options.${key}`);

  return (
    <aside className="inspector settings-panel" data-testid="settings-panel" aria-label="Workflow settings">
      <header className="inspector__head">
        <div className="inspector__icon" aria-hidden>
          ⚙
        </div>
        <div className="inspector__titles">
          <strong>Workflow settings</strong>
          <div className="inspector__meta">Saved with the workflow (Save, Ctrl+S)</div>
        </div>
        <button type="button" className="icon-btn" aria-label="Close settings" onClick={onClose} data-testid="settings-close">
          ×
        </button>
      </header>
      <div className="inspector__body">
        <section className="settings-section">
          <Field label="Title" error={byPath.title}>
            <input
              className="input"
              value={title}
              placeholder="Untitled workflow"
              readOnly={readOnly}
              data-testid="settings-title"
              onChange={(e) => store.getState().setTitle(e.target.value)}
            />
          </Field>
          <Field label="Description" error={byPath.description}>
            <textarea
              className="input"
              rows={3}
              value={description ?? ''}
              placeholder="What this workflow does, who to ask about it"
              readOnly={readOnly}
              data-testid="settings-description"
              onChange={(e) => store.getState().updateWorkflow({ description: e.target.value === '' ? null : e.target.value }, 'workflow:description')}
            />
          </Field>
          <div className="field-row">
            <Field label="Run timeout (s)" error={secondsError(timeout) ?? byPath['options.timeoutSeconds']} hint={timeout ? formatDuration(timeout) : 'Default 3600 (1 h): a longer run fails'}>
              <NumberInput value={timeout} min={1} placeholder="3600" readOnly={readOnly} testId="settings-timeout" onChange={(v) => setNumber('timeoutSeconds', v)} />
            </Field>
            <Field label="SLA (s)" error={secondsError(sla) ?? byPath['options.slaSeconds']} hint={sla ? formatDuration(sla) : 'Optional: the time a run should finish within'}>
              <NumberInput value={sla} min={1} placeholder="none" readOnly={readOnly} testId="settings-sla" onChange={(v) => setNumber('slaSeconds', v)} />
            </Field>
          </div>
        </section>
        <FlowControlSection options={options} problems={byPath} readOnly={readOnly} />
        <ScheduleEditor options={options} problems={byPath} readOnly={readOnly} />
        {workflowId && <WebhookSection workflowId={workflowId} readOnly={readOnly} />}
        <WebhookLabels options={options} problems={byPath} readOnly={readOnly} />
        {workflowId && <NotificationSection workflowId={workflowId} options={options} problems={byPath} readOnly={readOnly} />}
      </div>
    </aside>
  );
}
