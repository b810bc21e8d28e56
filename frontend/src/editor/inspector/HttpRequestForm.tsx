/**
 * The HTTP request node's form (SPEC §2 `http`): method, URL, query and headers (name → template), a body
 * (none, JSON or text), an optional HTTP data source whose base URL the URL is a path on (its headers and
 * secrets are sent), a request timeout and whether a non-2xx answer fails the node.
 */
import { useEffect, useState } from 'react';

import { dataSources, type DataSource } from '../../data/api';
import type { HttpConfig } from '../../graph/model';
import { errorMessage } from '../../shared/toasts';
import { Field, KeyValueEditor, NumberInput } from './fields';
import type { FormProps } from './forms';
import { TemplateInput } from './TemplateInput';

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

type BodyMode = 'none' | 'json' | 'text';

export function bodyModeOf(body: unknown): BodyMode {
  if (body === undefined || body === null) return 'none';
  return typeof body === 'string' ? 'text' : 'json';
}

function bodyText(body: unknown): string {
  if (body === undefined || body === null) return '';
  return typeof body === 'string' ? body : JSON.stringify(body, null, 2);
}

/** The query's values as the key-value editor shows them (a list or number as its JSON). */
function asTexts(entries: Readonly<Record<string, unknown>>): Record<string, string> {
  return Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
}

function without<K extends keyof HttpConfig>(config: HttpConfig, key: K): HttpConfig {
  const next = { ...config };
  delete next[key];
  return next;
}

function useHttpSources(): { sources: DataSource[] | null; error: string | null } {
  const [sources, setSources] = useState<DataSource[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    dataSources
      .list()
      .then((items) => live && setSources(items.filter((s) => s.kind === 'http')))
      .catch((err: unknown) => live && setError(errorMessage(err)));
    return () => {
      live = false;
    };
  }, []);
  return { sources, error };
}

function BodyEditor({ node, setConfig, readOnly, problemAt }: Omit<FormProps<'http'>, 'paths'>) {
  const config = node.data.config;
  const [mode, setMode] = useState<BodyMode>(bodyModeOf(config.body));
  const [text, setText] = useState(bodyText(config.body));
  const [jsonError, setJsonError] = useState<string | null>(null);
  useEffect(() => {
    setMode(bodyModeOf(node.data.config.body));
    setText(bodyText(node.data.config.body));
    setJsonError(null);
    // only when another node is shown: while typing, the text stays as typed
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [node.id]);

  const changeMode = (next: BodyMode) => {
    setMode(next);
    setJsonError(null);
    if (next === 'none') setConfig(without(config, 'body'));
    else if (next === 'text') setConfig({ ...config, body: text });
    else {
      try {
        setConfig({ ...config, body: JSON.parse(text || '{}') as unknown });
        if (!text) setText('{}');
      } catch {
        setJsonError('Not valid JSON yet: the last valid body is kept.');
      }
    }
  };
  const changeText = (value: string) => {
    setText(value);
    if (mode === 'text') {
      setConfig({ ...config, body: value }, `body:${node.id}`);
      return;
    }
    try {
      setConfig({ ...config, body: JSON.parse(value) as unknown }, `body:${node.id}`);
      setJsonError(null);
    } catch {
      setJsonError('Not valid JSON yet: the last valid body is kept.');
    }
  };
  return (
    <div className={`field${problemAt('config.body') || jsonError ? ' has-error' : ''}`}>
      <span className="field__label">Body</span>
      <div className="segmented" role="radiogroup" aria-label="Body type">
        {(['none', 'json', 'text'] as const).map((m) => (
          <label key={m} className="small">
            <input type="radio" name={`body-mode-${node.id}`} value={m} checked={mode === m} disabled={readOnly} onChange={() => changeMode(m)} data-testid={`http-body-${m}`} />{' '}
            {m === 'none' ? 'None' : m === 'json' ? 'JSON' : 'Text'}
          </label>
        ))}
      </div>
      {mode !== 'none' && (
        <textarea
          className="input input--mono"
          rows={5}
          value={text}
          readOnly={readOnly}
          aria-label="Request body"
          data-testid="http-body"
          placeholder={mode === 'json' ? '{"id": "{{ ctx.input.id }}"}' : 'text, or {{ ctx.order }} to send a value as JSON'}
          onChange={(e) => changeText(e.target.value)}
        />
      )}
      {(jsonError ?? problemAt('config.body')) && <span className="field__error">{jsonError ?? problemAt('config.body')}</span>}
      {mode !== 'none' && !jsonError && !problemAt('config.body') && (
        <span className="field__hint">
          {mode === 'json'
            ? 'Sent as application/json; "{{ … }}" strings are templates (one alone keeps its type).'
            : 'Sent as written; a body that is one template of an object or list is sent as JSON.'}
        </span>
      )}
    </div>
  );
}

export function HttpRequestForm({ node, setConfig, paths, readOnly, problemAt }: FormProps<'http'>) {
  const config = node.data.config;
  const { sources, error } = useHttpSources();
  const source = sources?.find((s) => s.id === config.dataSourceId) ?? null;
  const method = config.method || 'GET';
  const baseUrl = source && typeof source.config.baseUrl === 'string' ? source.config.baseUrl : null;
  const urlHint = config.dataSourceId
    ? `A path on ${baseUrl ?? 'the data source'}; its headers and secrets are sent.`
    : 'http:// or https://, a template or not. Internal addresses are refused unless FLOWDECK_HTTP_ALLOW lists them.';
  return (
    <>
      <div className="field-row">
        <Field label="Method" error={problemAt('config.method')}>
          <select className="input" value={method} disabled={readOnly} data-testid="http-method" onChange={(e) => setConfig({ ...config, method: e.target.value })}>
            {!(HTTP_METHODS as readonly string[]).includes(method) && <option value={method}>{method}</option>}
            {HTTP_METHODS.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Data source" error={problemAt('config.dataSourceId')} hint={error ? `Data sources could not be listed (${error}).` : undefined}>
          <select
            className="input"
            value={config.dataSourceId ?? ''}
            disabled={readOnly}
            data-testid="http-source"
            onChange={(e) => setConfig(e.target.value ? { ...config, dataSourceId: e.target.value } : without(config, 'dataSourceId'))}
          >
            <option value="">None: a full URL</option>
            {config.dataSourceId && !source && <option value={config.dataSourceId}>{sources === null ? config.dataSourceId : `${config.dataSourceId} (not found)`}</option>}
            {(sources ?? []).map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <Field label="URL" error={problemAt('config.url')} hint={urlHint}>
        <TemplateInput
          value={config.url}
          onChange={(url) => setConfig({ ...config, url }, `url:${node.id}`)}
          paths={paths}
          placeholder={config.dataSourceId ? '/orders/{{ ctx.input.id }}' : 'https://api.example.com/orders/{{ ctx.input.id }}'}
          readOnly={readOnly}
          ariaLabel="URL"
          testId="http-url"
        />
      </Field>
      <Field label="Query parameters" error={problemAt('config.query')}>
        <KeyValueEditor entries={asTexts(config.query)} onChange={(query) => setConfig({ ...config, query }, `query:${node.id}`)} paths={paths} keyPlaceholder="name" testId="http-query" readOnly={readOnly} />
      </Field>
      <Field label="Headers" error={problemAt('config.headers')}>
        <KeyValueEditor entries={config.headers} onChange={(headers) => setConfig({ ...config, headers }, `headers:${node.id}`)} paths={paths} keyPlaceholder="Header-Name" testId="http-headers" readOnly={readOnly} />
      </Field>
      <BodyEditor node={node} setConfig={setConfig} readOnly={readOnly} problemAt={problemAt} />
      <div className="field-row">
        <Field label="Request timeout (s)" error={problemAt('config.timeoutSeconds')} hint="Within the node's own timeout.">
          <NumberInput
            value={config.timeoutSeconds}
            min={0}
            placeholder="node timeout"
            readOnly={readOnly}
            testId="http-timeout"
            onChange={(v) => setConfig(v === undefined ? without(config, 'timeoutSeconds') : { ...config, timeoutSeconds: v })}
          />
        </Field>
        <Field label="Non-2xx answer" error={problemAt('config.failOnStatus')}>
          <select
            className="input"
            value={config.failOnStatus === false ? 'keep' : 'fail'}
            disabled={readOnly}
            data-testid="http-fail-on-status"
            onChange={(e) => setConfig(e.target.value === 'keep' ? { ...config, failOnStatus: false } : without(config, 'failOnStatus'))}
          >
            <option value="fail">fails the node (error handle)</option>
            <option value="keep">is output like any answer</option>
          </select>
        </Field>
      </div>
      <p className="muted small">
        Output <code>{'{status, headers, body}'}</code>, the body parsed when the answer is JSON. Network errors, 5xx and 429 are retried by the retry
        policy.
      </p>
    </>
  );
}
