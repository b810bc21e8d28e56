import { memo, useCallback, useMemo, useState } from 'react';

import type { WorkflowOptions } from '../../graph/convert';
import { CRON_HINT, schedulePreview } from '../../triggers/cron';
import { browserTimeZone, supportedTimeZones } from '../../triggers/timezones';
import { CodeEditor } from '../inspector/LazyCodeEditor';
import { useEditorStoreApi } from '../storeContext';
import {
  DEFAULT_CRON,
  DEFAULT_TIMEZONE,
  inputText,
  MAX_SCHEDULES,
  parseInputText,
  scheduleProblem,
  schedulesOf,
  validateSchedules,
  withSchedules,
  type Schedule,
  type ScheduleErrors,
} from './options';

const ZONE_LIST_ID = 'fd-timezones';

/** The input JSON of one row: the text is the user's until it parses; undo/redo of the value resets it. */
function ScheduleInput({ index, value, readOnly, serverError, onChange }: { index: number; value: Schedule['input']; readOnly: boolean; serverError?: string | undefined; onChange: (value: Schedule['input']) => void }) {
  const [text, setText] = useState(() => inputText(value));
  const [error, setError] = useState<string | null>(null);
  // Only an outside change of the value (undo, reload) replaces what is typed (adjusted while rendering).
  const [seen, setSeen] = useState(value);
  if (seen !== value) {
    setSeen(value);
    const parsed = parseInputText(text);
    if (!parsed.ok || JSON.stringify(parsed.value ?? null) !== JSON.stringify(value ?? null)) {
      setText(inputText(value));
      setError(null);
    }
  }
  const edit = (next: string) => {
    setText(next);
    const parsed = parseInputText(next);
    if (parsed.ok) {
      setError(null);
      onChange(parsed.value);
    } else setError(parsed.error);
  };
  const shown = error ?? serverError;
  return (
    <div className={`field${shown ? ' has-error' : ''}`}>
      <span className="field__label">Input (JSON, optional)</span>
      <CodeEditor language="json" value={text} onChange={readOnly ? undefined : edit} readOnly={readOnly} testId={`schedule-${index}-input`} minHeight={48} />
      {shown ? (
        <span className="field__error" data-testid={`schedule-${index}-input-error`}>
          {shown}
        </span>
      ) : (
        <span className="field__hint">Becomes the run’s input (ctx.input); blank is null.</span>
      )}
    </div>
  );
}

type RowProps = {
  index: number;
  schedule: Schedule;
  errors: ScheduleErrors;
  serverErrors: { row?: string | undefined; cron?: string | undefined; timezone?: string | undefined; input?: string | undefined };
  readOnly: boolean;
  onChange: (index: number, patch: Partial<Schedule>, field: string) => void;
  onRemove: (index: number) => void;
};

const ScheduleRow = memo(function ScheduleRow({ index, schedule, errors, serverErrors, readOnly, onChange, onRemove }: RowProps) {
  const zone = schedule.timezone || DEFAULT_TIMEZONE;
  const cronError = errors.cron ?? serverErrors.cron;
  const zoneError = errors.timezone ?? serverErrors.timezone;
  const preview = useMemo(() => (errors.cron || errors.timezone ? null : schedulePreview(schedule.cron, zone)), [schedule.cron, zone, errors.cron, errors.timezone]);
  const rowError = errors.row ?? serverErrors.row;
  return (
    <li className="schedule" data-testid={`schedule-${index}`}>
      <div className="schedule__head">
        <span className="schedule__title">Schedule {index + 1}</span>
        {!readOnly && (
          <button type="button" className="icon-btn" aria-label={`Remove schedule ${index + 1}`} onClick={() => onRemove(index)} data-testid={`schedule-${index}-remove`}>
            ×
          </button>
        )}
      </div>
      {rowError && (
        <div className="field__error" data-testid={`schedule-${index}-error`}>
          {rowError}
        </div>
      )}
      <div className="field-row">
        <label className={`field schedule__cron${cronError ? ' has-error' : ''}`}>
          <span className="field__label">Cron</span>
          <input
            className="input input--mono"
            value={schedule.cron}
            placeholder={DEFAULT_CRON}
            readOnly={readOnly}
            spellCheck={false}
            aria-invalid={cronError ? true : undefined}
            data-testid={`schedule-${index}-cron`}
            onChange={(e) => onChange(index, { cron: e.target.value }, 'cron')}
          />
          {cronError && (
            <span className="field__error" data-testid={`schedule-${index}-cron-error`}>
              {cronError}
            </span>
          )}
        </label>
        <label className={`field schedule__zone${zoneError ? ' has-error' : ''}`}>
          <span className="field__label">Time zone</span>
          <input
            className="input"
            value={schedule.timezone ?? ''}
            placeholder={DEFAULT_TIMEZONE}
            list={ZONE_LIST_ID}
            readOnly={readOnly}
            spellCheck={false}
            aria-invalid={zoneError ? true : undefined}
            data-testid={`schedule-${index}-timezone`}
            onChange={(e) => onChange(index, { timezone: e.target.value }, 'timezone')}
          />
          {zoneError && (
            <span className="field__error" data-testid={`schedule-${index}-timezone-error`}>
              {zoneError}
            </span>
          )}
        </label>
      </div>
      {preview && (
        <div className="schedule__preview" data-testid={`schedule-${index}-preview`} data-ok={preview.ok}>
          {preview.ok ? (
            <>
              <span className="muted small">Next runs ({zone}):</span>
              <ol>
                {preview.times.map((t) => (
                  <li key={t.iso} title={t.iso} data-testid="schedule-next-time">
                    {t.label} <span className="muted">· {t.relative}</span>
                  </li>
                ))}
              </ol>
            </>
          ) : (
            <span className="field__error">{preview.error}</span>
          )}
        </div>
      )}
      <ScheduleInput index={index} value={schedule.input} readOnly={readOnly} serverError={serverErrors.input} onChange={(input) => onChange(index, { input }, 'input')} />
    </li>
  );
});

/** Stable React keys for rows that have no ids: follow adds and removals, rebuilt if the count jumps (undo). */
function useRowKeys(count: number) {
  const [rows, setRows] = useState(() => ({ keys: Array.from({ length: count }, (_, i) => i), next: count }));
  if (rows.keys.length !== count) {
    // Adjusted while rendering (React's pattern for state that follows a prop).
    const keys = rows.keys.slice(0, count);
    let next = rows.next;
    while (keys.length < count) keys.push(next++);
    setRows({ keys, next });
  }
  const remove = useCallback((index: number) => setRows((r) => ({ ...r, keys: r.keys.filter((_, i) => i !== index) })), []);
  return { keys: rows.keys, remove };
}

export function ScheduleEditor({ options, problems, readOnly }: { options: WorkflowOptions | null; problems: Record<string, string>; readOnly: boolean }) {
  const store = useEditorStoreApi();
  const schedules = useMemo(() => schedulesOf(options), [options]);
  const zones = supportedTimeZones();
  const errors = useMemo(() => validateSchedules(schedules, zones), [schedules, zones]);
  const rowKeys = useRowKeys(schedules.length);
  const removeRowKey = rowKeys.remove;

  const onChange = useMemo(
    () => (index: number, patch: Partial<Schedule>, field: string) => {
      const current = schedulesOf(store.getState().options);
      const row = current[index];
      if (!row) return;
      const updated: Schedule = { ...row, ...patch };
      if (updated.input === undefined) delete updated.input;
      current[index] = updated;
      store.getState().updateWorkflow({ options: withSchedules(store.getState().options, current) }, `schedules[${index}].${field}`);
    },
    [store],
  );
  const onRemove = useMemo(
    () => (index: number) => {
      const current = schedulesOf(store.getState().options);
      removeRowKey(index);
      store.getState().updateWorkflow({ options: withSchedules(store.getState().options, current.filter((_, i) => i !== index)) });
    },
    [store, removeRowKey],
  );
  const add = () => {
    const current = schedulesOf(store.getState().options);
    store.getState().updateWorkflow({ options: withSchedules(store.getState().options, [...current, { cron: DEFAULT_CRON, timezone: browserTimeZone() }]) });
  };

  const listError = problems['options.schedules'];
  return (
    <section className="settings-section" data-testid="schedules">
      <h3 className="section-title">Schedules</h3>
      <p className="muted small">
        Each due time starts one production run of the saved version. Cron has 5 fields: {CRON_HINT}.
      </p>
      {listError && <div className="field__error">{listError}</div>}
      {schedules.length === 0 && <div className="muted small">No schedules.</div>}
      <ol className="schedules">
        {schedules.map((schedule, i) => (
          <ScheduleRow
            key={rowKeys.keys[i]}
            index={i}
            schedule={schedule}
            errors={errors[i] ?? {}}
            serverErrors={{
              row: scheduleProblem(problems, i),
              cron: scheduleProblem(problems, i, 'cron'),
              timezone: scheduleProblem(problems, i, 'timezone'),
              input: scheduleProblem(problems, i, 'input'),
            }}
            readOnly={readOnly}
            onChange={onChange}
            onRemove={onRemove}
          />
        ))}
      </ol>
      {!readOnly && (
        <button type="button" className="btn btn--small" onClick={add} disabled={schedules.length >= MAX_SCHEDULES} data-testid="schedule-add" title={schedules.length >= MAX_SCHEDULES ? `At most ${MAX_SCHEDULES} schedules` : undefined}>
          + Add schedule
        </button>
      )}
      <datalist id={ZONE_LIST_ID}>
        {zones.map((z) => (
          <option key={z} value={z} />
        ))}
      </datalist>
    </section>
  );
}
