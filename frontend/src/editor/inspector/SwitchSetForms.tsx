/** The forms of the `switch` node (a value and ordered cases, one output each) and the `set` node (named fields). */
import type { SetField, SwitchCase } from '../../graph/model';
import { Field } from './fields';
import type { FormProps } from './forms';
import { TemplateInput } from './TemplateInput';

export const MATCHERS = ['equals', 'in', 'matches', 'expression'] as const;
export type Matcher = (typeof MATCHERS)[number];

const MATCHER_TEXT: Record<Matcher, string> = {
  equals: 'equals',
  in: 'is one of',
  matches: 'matches regex',
  expression: 'expression is true',
};

const PLACEHOLDER: Record<Matcher, string> = {
  equals: 'vip   (3, true, null and "quoted" text are JSON)',
  in: 'gold, silver   (or a JSON list)',
  matches: '^ord-\\d+$',
  expression: 'value > ctx.input.limit',
};

export function matcherOf(c: SwitchCase): Matcher {
  return MATCHERS.find((m) => m in c) ?? 'equals';
}

/** A typed value from a text field: JSON when it parses (`3`, `true`, `"3"`), else the text itself. */
export function parseLoose(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return text;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return text;
  }
}

/** The text `parseLoose` turns back into `value`. */
export function showLoose(value: unknown): string {
  if (typeof value === 'string') return typeof parseLoose(value) === 'string' ? value : JSON.stringify(value);
  return value === undefined ? '' : JSON.stringify(value);
}

function parseList(text: string): unknown[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    const parsed = parseLoose(trimmed);
    if (Array.isArray(parsed)) return parsed as unknown[];
  }
  return trimmed === '' ? [] : text.split(',').map((item) => parseLoose(item.trim()));
}

/** `case1`, `case2` …: the first free one (a handle is a name people read on the canvas). */
function nextHandle(cases: readonly SwitchCase[]): string {
  const taken = new Set(cases.map((c) => c.handle));
  let n = cases.length + 1;
  while (taken.has(`case${n}`)) n++;
  return `case${n}`;
}

function caseText(c: SwitchCase, matcher: Matcher): string {
  if (matcher === 'in') return (c.in ?? []).map(showLoose).join(', ');
  if (matcher === 'equals') return showLoose(c.equals);
  return (matcher === 'matches' ? c.matches : c.expression) ?? '';
}

function withMatcher(c: SwitchCase, matcher: Matcher, text: string): SwitchCase {
  const base: SwitchCase = { handle: c.handle };
  if (matcher === 'equals') return { ...base, equals: parseLoose(text) };
  if (matcher === 'in') return { ...base, in: parseList(text) };
  return { ...base, [matcher]: text };
}

export function SwitchForm({ node, setConfig, paths, readOnly, problemAt }: FormProps<'switch'>) {
  const { value, cases } = node.data.config;
  const put = (next: SwitchCase[], key?: string) => setConfig({ value, cases: next }, key);
  const edit = (i: number, next: SwitchCase, field: string) => put(cases.map((c, j) => (j === i ? next : c)), `case:${node.id}:${i}:${field}`);
  const error = (path: string) => problemAt(path) && <span className="field__error">{problemAt(path)}</span>;
  return (
    <>
      <Field label="Value" error={problemAt('config.value')} hint="A template; each case compares it (an expression reads it as value).">
        <TemplateInput value={value} onChange={(next) => setConfig({ value: next, cases }, `value:${node.id}`)} paths={paths} readOnly={readOnly} testId="switch-value" />
      </Field>
      <div className="branches" data-testid="case-editor">
        <div className="field__label">Cases (checked in order; the first that holds takes its output)</div>
        {cases.map((c, i) => {
          const matcher = matcherOf(c);
          return (
            <div className="branch" key={i} data-testid={`case-${i}`}>
              <div className="branch__head">
                <span className="branch__index">{i + 1}</span>
                <input
                  className="input input--mono"
                  value={c.handle}
                  placeholder="output name"
                  aria-label="Case output"
                  readOnly={readOnly}
                  data-testid={`case-${i}-handle`}
                  onChange={(e) => edit(i, { ...c, handle: e.target.value }, 'handle')}
                />
                <select
                  className="input"
                  aria-label="Case test"
                  value={matcher}
                  disabled={readOnly}
                  data-testid={`case-${i}-matcher`}
                  onChange={(e) => edit(i, withMatcher(c, e.target.value as Matcher, caseText(c, matcher)), 'matcher')}
                >
                  {MATCHERS.map((m) => (
                    <option key={m} value={m}>
                      {MATCHER_TEXT[m]}
                    </option>
                  ))}
                </select>
                {!readOnly && (
                  <button type="button" className="icon-btn" aria-label="Remove case" data-testid={`case-${i}-remove`} onClick={() => put(cases.filter((_, j) => j !== i))}>
                    ×
                  </button>
                )}
              </div>
              {matcher === 'expression' ? (
                <TemplateInput
                  value={c.expression ?? ''}
                  onChange={(text) => edit(i, withMatcher(c, 'expression', text), 'text')}
                  paths={paths}
                  placeholder={PLACEHOLDER.expression}
                  readOnly={readOnly}
                  ariaLabel="Case expression"
                  preview="expression"
                  switchValue={value}
                  testId={`case-${i}-text`}
                />
              ) : (
                <input
                  className="input input--mono"
                  value={caseText(c, matcher)}
                  placeholder={PLACEHOLDER[matcher]}
                  aria-label={`Case ${MATCHER_TEXT[matcher]}`}
                  readOnly={readOnly}
                  data-testid={`case-${i}-text`}
                  onChange={(e) => edit(i, withMatcher(c, matcher, e.target.value), 'text')}
                />
              )}
              {error(`config.cases[${i}]`)}
              {error(`config.cases[${i}].handle`)}
              {error(`config.cases[${i}].${matcher}`)}
            </div>
          );
        })}
        <div className="branch branch--else">
          <span className="branch__index">↳</span> <strong>default</strong> <span className="muted">— when no case holds</span>
        </div>
        {!readOnly && (
          <button
            type="button"
            className="btn btn--small"
            data-testid="case-add"
            onClick={() => put([...cases, { handle: nextHandle(cases), equals: '' }])}
          >
            + Add case
          </button>
        )}
        {error('config.cases')}
      </div>
    </>
  );
}

export function SetForm({ node, setConfig, paths, readOnly, problemAt }: FormProps<'set'>) {
  const { fields, keepInput = false } = node.data.config;
  const put = (next: SetField[], key?: string) => setConfig({ fields: next, keepInput }, key);
  const edit = (i: number, patch: Partial<SetField>, field: string) => put(fields.map((f, j) => (j === i ? { ...f, ...patch } : f)), `field:${node.id}:${i}:${field}`);
  const error = (path: string) => problemAt(path) && <span className="field__error">{problemAt(path)}</span>;
  return (
    <>
      <div className="kv" data-testid="set-fields">
        <div className="field__label">Fields</div>
        {fields.length === 0 && <div className="muted small">None yet.</div>}
        {fields.map((f, i) => (
          <div key={i}>
            <div className="kv__row">
              <input
                className="input input--mono kv__key"
                value={f.name}
                placeholder="customer.name"
                aria-label="Field name"
                readOnly={readOnly}
                data-testid={`set-field-${i}-name`}
                onChange={(e) => edit(i, { name: e.target.value }, 'name')}
              />
              <TemplateInput
                value={typeof f.value === 'string' ? f.value : JSON.stringify(f.value ?? null)}
                onChange={(value) => edit(i, { value }, 'value')}
                paths={paths}
                placeholder="{{ ctx.input.id }}"
                readOnly={readOnly}
                ariaLabel={`value of ${f.name}`}
                testId={`set-field-${i}-value`}
              />
              {!readOnly && (
                <button type="button" className="icon-btn" aria-label={`Remove ${f.name}`} onClick={() => put(fields.filter((_, j) => j !== i))}>
                  ×
                </button>
              )}
            </div>
            {error(`config.fields[${i}].name`)}
            {error(`config.fields[${i}].value`)}
          </div>
        ))}
        {!readOnly && (
          <button type="button" className="btn btn--small btn--ghost" data-testid="set-fields-add" onClick={() => put([...fields, { name: `field${fields.length + 1}`, value: '' }])}>
            + Add field
          </button>
        )}
        <p className="muted field__help">
          A value that is exactly <code>{'{{ expr }}'}</code> keeps its type (number, list, object); a dotted name (<code>customer.name</code>) sets a nested key.
        </p>
        {error('config.fields')}
      </div>
      <label className="set-keep-input" data-testid="set-keep-input">
        <input type="checkbox" checked={keepInput} disabled={readOnly} onChange={(e) => setConfig({ fields, keepInput: e.target.checked })} />
        <span>
          Keep the input: set the fields on the output of the node whose edge led here (with several, the first in edge order that ran)
        </span>
      </label>
      {error('config.keepInput')}
    </>
  );
}
