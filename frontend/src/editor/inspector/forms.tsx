/** One config form per node type (SPEC §2). Each edits `config` through `update`, which records undo. */
import type { Problem } from '../../api/types';
import { newId } from '../../graph/ids';
import type { Branch, ConfigByType, EditorNodeOf, NodeData, NodeType } from '../../graph/model';
import { CodeEditor } from './LazyCodeEditor';
import { Field, KeyValueEditor, NumberInput } from './fields';

export { DataQueryForm } from './DataQueryForm';
export { WaitForm } from './WaitForm';
export { WorkflowForm } from './WorkflowForm';
export { SetForm, SwitchForm } from './SwitchSetForms';
import { TemplateInput } from './TemplateInput';

export type FormProps<T extends NodeType> = {
  node: EditorNodeOf<T>;
  setConfig: (config: ConfigByType[T], coalesceKey?: string) => void;
  paths: readonly string[];
  readOnly: boolean;
  problemAt: (path: string) => string | undefined;
};

export function PythonForm({ node, setConfig, paths, readOnly, problemAt }: FormProps<'python'>) {
  return (
    <Field
      label="Code"
      error={problemAt('config.code')}
      hint={
        <>
          A function body: read <code>ctx['input']</code> and upstream outputs, <code>return</code> the output. Type <code>ctx.</code> for
          suggestions (↓ then Enter takes one).
        </>
      }
    >
      <CodeEditor
        language="python"
        value={node.data.config.code}
        onChange={(code) => setConfig({ code }, `code:${node.id}`)}
        completions={paths}
        readOnly={readOnly}
        testId="python-code"
      />
    </Field>
  );
}

function moved<T>(items: readonly T[], from: number, to: number): T[] {
  const copy = [...items];
  const [item] = copy.splice(from, 1);
  if (item !== undefined) copy.splice(to, 0, item);
  return copy;
}

export function ConditionForm({ node, setConfig, paths, readOnly, problemAt }: FormProps<'condition'>) {
  const branches = node.data.config.branches;
  const put = (next: Branch[], key?: string) => setConfig({ branches: next }, key);
  const edit = (i: number, patch: Partial<Branch>, field: string) =>
    put(
      branches.map((b, j) => (j === i ? { ...b, ...patch } : b)),
      `branch:${node.id}:${i}:${field}`,
    );
  return (
    <div className="branches" data-testid="branch-editor">
      <div className="field__label">Branches (checked in order; the first true one is taken)</div>
      {branches.map((b, i) => (
        <div className="branch" key={b.id} data-testid={`branch-${i}`}>
          <div className="branch__head">
            <span className="branch__index">{i + 1}</span>
            <input
              className="input"
              value={b.label}
              placeholder="Label"
              aria-label="Branch label"
              readOnly={readOnly}
              data-testid={`branch-${i}-label`}
              onChange={(e) => edit(i, { label: e.target.value }, 'label')}
            />
            <code className="branch__id" title="Handle id">
              {b.id}
            </code>
            {!readOnly && (
              <span className="branch__actions">
                <button type="button" className="icon-btn" aria-label="Move up" disabled={i === 0} onClick={() => put(moved(branches, i, i - 1))}>
                  ↑
                </button>
                <button
                  type="button"
                  className="icon-btn"
                  aria-label="Move down"
                  disabled={i === branches.length - 1}
                  data-testid={`branch-${i}-down`}
                  onClick={() => put(moved(branches, i, i + 1))}
                >
                  ↓
                </button>
                <button
                  type="button"
                  className="icon-btn"
                  aria-label="Remove branch"
                  data-testid={`branch-${i}-remove`}
                  onClick={() => put(branches.filter((_, j) => j !== i))}
                >
                  ×
                </button>
              </span>
            )}
          </div>
          <TemplateInput
            value={b.expression}
            onChange={(expression) => edit(i, { expression }, 'expression')}
            paths={paths}
            placeholder="ctx.score.value > 10"
            readOnly={readOnly}
            ariaLabel="Branch expression"
            preview="expression"
            testId={`branch-${i}-expression`}
          />
          {problemAt(`config.branches[${i}].expression`) && <span className="field__error">{problemAt(`config.branches[${i}].expression`)}</span>}
        </div>
      ))}
      <div className="branch branch--else">
        <span className="branch__index">↳</span> <strong>else</strong> <span className="muted">— when no branch is true</span>
      </div>
      <p className="muted field__help" data-testid="condition-truthy-help">
        Branches use Python truthiness. For text from outside (webhooks, forms), write{' '}
        <code>ctx.input.active is truthy</code>: it also counts "false", "no", "off", "0", "null", "none" and "" as false.
      </p>
      {!readOnly && (
        <button
          type="button"
          className="btn btn--small"
          data-testid="branch-add"
          onClick={() =>
            put([
              ...branches,
              { id: newId('b', new Set(branches.map((x) => x.id))), label: `Branch ${branches.length + 1}`, expression: '' },
            ])
          }
        >
          + Add branch
        </button>
      )}
      {problemAt('config.branches') && <span className="field__error">{problemAt('config.branches')}</span>}
    </div>
  );
}

export function DelayForm({ node, setConfig, paths, readOnly, problemAt }: FormProps<'delay'>) {
  const seconds = node.data.config.seconds;
  return (
    <Field label="Seconds" error={problemAt('config.seconds')} hint="A number (0 to 30 days) or a template. No worker is held while waiting.">
      <TemplateInput
        value={String(seconds)}
        onChange={(text) => setConfig({ seconds: /^\s*\d+(\.\d+)?\s*$/.test(text) ? Number(text) : text }, `delay:${node.id}`)}
        paths={paths}
        readOnly={readOnly}
        testId="delay-seconds"
      />
    </Field>
  );
}

export function LoopForm({ node, setConfig, paths, readOnly, problemAt }: FormProps<'loop'>) {
  const config = node.data.config;
  return (
    <>
      <Field label="Items" error={problemAt('config.items')} hint="A template giving a list. The body (from the loop handle) runs once per item with ctx.loop.">
        <TemplateInput value={config.items} onChange={(items) => setConfig({ ...config, items }, `items:${node.id}`)} paths={paths} readOnly={readOnly} testId="loop-items" />
      </Field>
      <div className="field-row">
        <Field label="Concurrency" error={problemAt('config.concurrency')}>
          <NumberInput value={config.concurrency} min={1} max={50} readOnly={readOnly} onChange={(v) => setConfig({ ...config, concurrency: v ?? 1 })} />
        </Field>
        <Field label="Max items" error={problemAt('config.maxItems')}>
          <NumberInput
            value={config.maxItems}
            min={1}
            placeholder="10000"
            readOnly={readOnly}
            onChange={(v) => {
              const next = { ...config };
              if (v === undefined) delete next.maxItems;
              else next.maxItems = v;
              setConfig(next);
            }}
          />
        </Field>
      </div>
    </>
  );
}

/** A node whose edge leads into the one being edited: what "the previous node's output" means. */
export type PreviousNode = { id: string; label: string; variable: string };

export function EndForm({ node, setConfig, paths, readOnly, problemAt, previous = [] }: FormProps<'end'> & { previous?: readonly PreviousNode[] }) {
  const params = node.data.config.outputParameters;
  const returnOutput = (p: PreviousNode) => setConfig({ outputParameters: { ...params, result: `{{ ctx.${p.variable} }}` } });
  return (
    <>
      <Field label="Output parameters" error={problemAt('config.outputParameters')} hint="Each becomes a key of the run output.">
        <KeyValueEditor
          entries={params}
          onChange={(outputParameters) => setConfig({ outputParameters }, `out:${node.id}`)}
          paths={paths}
          keyPlaceholder="name"
          testId="output-parameters"
          readOnly={readOnly}
        />
      </Field>
      {!readOnly &&
        previous.map((p) => (
          <button key={p.id} type="button" className="btn btn--small" data-testid={`end-return-${p.id}`} onClick={() => returnOutput(p)}>
            {previous.length > 1 ? `Return the output of ${p.label} (ctx.${p.variable}) as result` : "Return the previous node's output as result"}
          </button>
        ))}
    </>
  );
}

export function StartForm() {
  return <p className="muted">The start node passes the run input on as <code>ctx.input</code>. It has no settings.</p>;
}

export type SettingsPatch = Partial<Omit<NodeData, 'config'>>;

/** Problem paths the forms show next to their field (the panel's list leaves them out). */
const INLINE_PATHS: readonly RegExp[] = [
  /^config\.code$/,
  /^config\.branches(\[\d+\]\.expression)?$/,
  /^config\.(queryId|args|workflowId|input|version|seconds|items|concurrency|maxItems|outputParameters)$/,
  /^config\.(resumeOn|timeoutSeconds|fields(\[\d+\]\.\w+)?)$/,
  /^config\.(method|url|query|headers|body|dataSourceId|timeoutSeconds|failOnStatus)$/, // http
  /^config\.(value|cases|fields|keepInput)$/,
  /^config\.(cases|fields)\[\d+\](\.(handle|name|value|equals|in|matches|expression))?$/,
  /^outputVariable$/,
  /^retry\.maxAttempts$/,
  /^timeoutSeconds$/,
];

export function shownInline(problem: Problem): boolean {
  return problem.severity !== 'warning' && problem.path !== undefined && INLINE_PATHS.some((re) => re.test(problem.path ?? ''));
}

export function problemLookup(problems: readonly Problem[] | undefined) {
  return (path: string) => problems?.find((p) => p.path === path && p.severity !== 'warning')?.message;
}
