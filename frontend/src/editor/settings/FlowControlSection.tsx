/**
 * Flow control (SPEC §2): how many runs of this workflow may run at once per key and what a run past the
 * limit does, debounce, and the workflow's default priority. Checked in the browser with the server's ranges;
 * the server's problems (by path) show on top. Saved with the workflow.
 */
import { Field, NumberInput } from '../inspector/fields';
import { useEditorStoreApi } from '../storeContext';
import type { WorkflowOptions } from '../../graph/convert';
import {
  concurrencyOf,
  debounceOf,
  debounceSecondsError,
  DEFAULT_PRIORITY,
  keyError,
  limitError,
  MAX_PRIORITY,
  MIN_PRIORITY,
  priorityError,
  priorityOf,
  STRATEGIES,
  STRATEGY_LABELS,
  withConcurrency,
  withDebounce,
  withPriority,
  type Concurrency,
  type Debounce,
  type Strategy,
} from './flowControl';
import { formatDuration } from './options';

export function FlowControlSection({
  options,
  problems,
  readOnly,
}: {
  options: WorkflowOptions | null;
  problems: Record<string, string>;
  readOnly: boolean;
}) {
  const store = useEditorStoreApi();
  const concurrency = concurrencyOf(options);
  const debounce = debounceOf(options);
  const priority = priorityOf(options);
  const update = (next: WorkflowOptions | null, key: string) => store.getState().updateWorkflow({ options: next }, key);
  const setConcurrency = (value: Concurrency | null) => update(withConcurrency(store.getState().options, value), 'options.concurrency');
  const setDebounce = (value: Debounce | null) => update(withDebounce(store.getState().options, value), 'options.debounce');

  return (
    <section className="settings-section" data-testid="flow-control">
      <h3 className="section-title">Flow control</h3>
      <label className="check">
        <input
          type="checkbox"
          checked={concurrency !== null}
          disabled={readOnly}
          data-testid="flow-concurrency-on"
          onChange={(e) => setConcurrency(e.target.checked ? { limit: 1, strategy: 'queue' } : null)}
        />
        Limit runs at once
      </label>
      {concurrency && (
        <>
          <div className="field-row">
            <Field label="At most (runs)" error={limitError(concurrency.limit) ?? problems['options.concurrency.limit']}>
              <NumberInput
                value={concurrency.limit}
                min={1}
                step={1}
                placeholder="1"
                readOnly={readOnly}
                testId="flow-concurrency-limit"
                onChange={(v) => setConcurrency({ ...concurrency, limit: v })}
              />
            </Field>
            <Field label="Past the limit" error={problems['options.concurrency.strategy']}>
              <select
                className="input"
                value={concurrency.strategy}
                disabled={readOnly}
                data-testid="flow-concurrency-strategy"
                onChange={(e) => setConcurrency({ ...concurrency, strategy: e.target.value as Strategy })}
              >
                {STRATEGIES.map((s) => (
                  <option key={s} value={s}>
                    {STRATEGY_LABELS[s]}
                  </option>
                ))}
              </select>
            </Field>
          </div>
          <KeyField
            value={concurrency.key}
            problem={problems['options.concurrency.key']}
            hint="Empty: one limit for all runs. E.g. {{ ctx.input.customerId }}: the limit holds per customer"
            placeholder="{{ ctx.input.customerId }}"
            readOnly={readOnly}
            testId="flow-concurrency-key"
            onChange={(key) => setConcurrency({ ...concurrency, key })}
          />
        </>
      )}
      <label className="check">
        <input
          type="checkbox"
          checked={debounce !== null}
          disabled={readOnly}
          data-testid="flow-debounce-on"
          onChange={(e) => setDebounce(e.target.checked ? { seconds: 5 } : null)}
        />
        Debounce: starts close together collapse into the last
      </label>
      {debounce && (
        <div className="field-row">
          <Field
            label="Quiet time (s)"
            error={debounceSecondsError(debounce.seconds) ?? problems['options.debounce.seconds']}
            hint={debounce.seconds ? `The last run starts ${formatDuration(debounce.seconds)} after the last start` : undefined}
          >
            <NumberInput
              value={debounce.seconds}
              min={0}
              placeholder="5"
              readOnly={readOnly}
              testId="flow-debounce-seconds"
              onChange={(v) => setDebounce({ ...debounce, seconds: v })}
            />
          </Field>
          <KeyField
            value={debounce.key}
            problem={problems['options.debounce.key']}
            placeholder="{{ ctx.input.documentId }}"
            readOnly={readOnly}
            testId="flow-debounce-key"
            onChange={(key) => setDebounce({ ...debounce, key })}
          />
        </div>
      )}
      <Field
        label="Priority"
        error={priorityError(priority) ?? problems['options.priority']}
        hint={`${MIN_PRIORITY}–${MAX_PRIORITY}, default ${DEFAULT_PRIORITY}: queued runs with a higher priority start first (waiting lifts the others)`}
      >
        <NumberInput
          value={priority}
          min={MIN_PRIORITY}
          max={MAX_PRIORITY}
          step={1}
          placeholder={String(DEFAULT_PRIORITY)}
          readOnly={readOnly}
          testId="flow-priority"
          onChange={(v) => update(withPriority(store.getState().options, v), 'options.priority')}
        />
      </Field>
    </section>
  );
}

type KeyFieldProps = {
  value: string | undefined;
  problem: string | undefined;
  hint?: string;
  placeholder: string;
  readOnly: boolean;
  testId: string;
  onChange: (key: string) => void;
};

/** The "per key" template of a flow-control rule: its own check first, then what the server said. */
function KeyField({ value, problem, hint, placeholder, readOnly, testId, onChange }: KeyFieldProps) {
  return (
    <Field label="Per key (template)" error={keyError(value) ?? problem} hint={hint}>
      <input
        className="input"
        value={value ?? ''}
        placeholder={placeholder}
        readOnly={readOnly}
        data-testid={testId}
        onChange={(e) => onChange(e.target.value)}
      />
    </Field>
  );
}
