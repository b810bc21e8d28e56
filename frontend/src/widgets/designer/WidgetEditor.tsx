/** Edit one widget: type, mode, name, config with path suggestions from a real run, live preview, save, embed links. */
import { useEffect, useMemo, useRef, useState } from 'react';

import { ApiError } from '../../api/client';
import { runs as runsApi } from '../../api/endpoints';
import type { RunSummary } from '../../api/types';
import { formatTime } from '../../shared/format';
import { errorMessage, toast } from '../../shared/toasts';
import { widgetsApi } from '../api';
import { WIDGET_MODES, WIDGET_TYPES, type Widget, type WidgetAnswer, type WidgetBody, type WidgetMode, type WidgetType } from '../types';
import { errorAnswer, WidgetView } from '../WidgetView';
import { cleanConfig, defaultConfig, formatFrameAncestors, parseFrameAncestors, previewConfig, withMode, type Config } from './config';
import { ConfigForm } from './ConfigForm';
import { EmbedTokens } from './EmbedTokens';

const PREVIEW_DEBOUNCE_MS = 350;

type Props = {
  workflowId: string;
  widget: Widget | null;
  runs: RunSummary[] | null;
  onSaved: (widget: Widget, created: boolean) => void;
  onDelete: (widget: Widget) => void;
};

/** The message and config field of a failed request (a 400 names the field in `extra`, docs/widgets.md). */
function describeError(err: unknown): { field: string | null; message: string } {
  if (err instanceof ApiError) {
    const extra = err.extra as unknown;
    const first = Array.isArray(extra) ? (extra[0] as unknown) : extra;
    if (typeof first === 'object' && first !== null) {
      const o = first as Record<string, unknown>;
      const field = typeof o.field === 'string' ? o.field : typeof o.key === 'string' ? o.key : null;
      const message = typeof o.message === 'string' ? o.message : err.detail;
      return { field, message };
    }
    return { field: null, message: err.detail };
  }
  return { field: null, message: errorMessage(err) };
}

function modeLabel(mode: WidgetMode): string {
  return mode === 'replay' ? 'replay (latest production run)' : 'sync (a run per request)';
}

export function WidgetEditor({ workflowId, widget, runs, onSaved, onDelete }: Props) {
  const [name, setName] = useState(widget?.name ?? 'New widget');
  const [type, setType] = useState<WidgetType>(widget?.type ?? 'table');
  const [mode, setMode] = useState<WidgetMode>(widget?.mode ?? 'replay');
  const [config, setConfig] = useState<Config>(widget?.config ?? defaultConfig('table', null));
  const [ancestors, setAncestors] = useState(formatFrameAncestors(widget?.frameAncestors));
  const [runId, setRunId] = useState<string>('');
  const [output, setOutput] = useState<unknown>(undefined);
  const [preview, setPreview] = useState<WidgetAnswer | null>(null);
  const [previewing, setPreviewing] = useState(false);
  const [saving, setSaving] = useState(false);
  const [saveError, setSaveError] = useState<{ field: string | null; message: string } | null>(null);
  const touched = useRef(widget !== null);

  // the newest completed production run is the default preview
  useEffect(() => {
    if (!runId && runs && runs[0]) setRunId(runs[0].instanceId);
  }, [runs, runId]);

  useEffect(() => {
    if (!runId) return;
    let live = true;
    setOutput(undefined);
    runsApi
      .get(runId)
      .then((run) => {
        if (!live) return;
        setOutput(run.output);
        // an untouched new widget starts from paths found in the run
        if (!touched.current) setConfig(defaultConfig(type, run.output, mode));
      })
      .catch((err: unknown) => live && toast('error', `Could not load the run: ${errorMessage(err)}`));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- loads when the run changes; type and mode are read as they are then
  }, [runId]);

  const sent = useMemo(() => previewConfig(type, config), [type, config]);
  const sentKey = JSON.stringify(sent);
  useEffect(() => {
    if (!runId) return;
    const abort = new AbortController();
    setPreviewing(true);
    const timer = window.setTimeout(() => {
      widgetsApi
        .preview(runId, type, JSON.parse(sentKey) as Config, abort.signal)
        .then((answer) => setPreview(answer))
        .catch((err: unknown) => {
          if (err instanceof DOMException && err.name === 'AbortError') return;
          const { field, message } = describeError(err);
          setPreview(errorAnswer(type, message, field));
        })
        .finally(() => {
          if (!abort.signal.aborted) setPreviewing(false);
        });
    }, PREVIEW_DEBOUNCE_MS);
    return () => {
      window.clearTimeout(timer);
      abort.abort();
    };
  }, [runId, type, sentKey]);

  const frame = parseFrameAncestors(ancestors);
  const body: WidgetBody = { workflowId, name: name.trim(), type, mode, config: cleanConfig(type, mode, config), frameAncestors: frame.value };
  const dirty =
    widget === null ||
    JSON.stringify(body) !==
      JSON.stringify({ workflowId: widget.workflowId, name: widget.name, type: widget.type, mode: widget.mode, config: cleanConfig(widget.type, widget.mode, widget.config), frameAncestors: widget.frameAncestors ?? null });

  const change = (next: Config) => {
    touched.current = true;
    setConfig(next);
  };

  const save = async () => {
    if (!body.name) {
      setSaveError({ field: 'name', message: 'Give the widget a name' });
      return;
    }
    if (frame.invalid.length) {
      setSaveError({ field: 'frameAncestors', message: `not an origin: ${frame.invalid.join(', ')}` });
      return;
    }
    setSaving(true);
    setSaveError(null);
    try {
      const saved = widget ? await widgetsApi.save(widget.id, body) : await widgetsApi.create(body);
      touched.current = true;
      toast('success', widget ? 'Widget saved' : 'Widget created');
      onSaved(saved, widget === null);
    } catch (err) {
      setSaveError(describeError(err));
    } finally {
      setSaving(false);
    }
  };

  const completedRuns = runs ?? [];
  return (
    <div className="wd-editor" data-testid="widget-editor" data-widget-id={widget?.id ?? ''}>
      <div className="wd-editor__form">
        <div className="wd-editor__head">
          <input className="input wd-name" value={name} onChange={(e) => setName(e.target.value)} aria-label="Widget name" data-testid="widget-name" />
          {dirty && widget && <span className="unsaved">● Unsaved</span>}
          <span className="spacer" />
          {widget && (
            <button type="button" className="btn btn--danger-text btn--small" onClick={() => onDelete(widget)} data-testid="widget-delete">
              Delete
            </button>
          )}
          <button type="button" className="btn btn--primary" onClick={() => void save()} disabled={saving || (!dirty && widget !== null)} data-testid="widget-save">
            {saving ? 'Saving…' : widget ? 'Save' : 'Create widget'}
          </button>
        </div>
        {saveError && (
          <div className="error-box" data-testid="widget-save-error">
            {saveError.field && <code>{saveError.field}</code>} {saveError.message}
          </div>
        )}
        <div className="field-row">
          <div className="field field--auto">
            <span className="field__label">Type</span>
            <div className="segmented" role="radiogroup" aria-label="Widget type">
              {WIDGET_TYPES.map((t) => (
                <button
                  key={t}
                  type="button"
                  role="radio"
                  aria-checked={t === type}
                  className={t === type ? 'is-active' : undefined}
                  data-testid={`widget-type-${t}`}
                  onClick={() => {
                    if (t === type) return;
                    setType(t);
                    setConfig(defaultConfig(t, output ?? null, mode));
                  }}
                >
                  {t}
                </button>
              ))}
            </div>
          </div>
          <label className="field">
            <span className="field__label">Mode</span>
            <select
              className="input"
              value={mode}
              data-testid="widget-mode"
              onChange={(e) => {
                const m = e.target.value as WidgetMode;
                setMode(m);
                setConfig((c) => withMode(c, m));
              }}
            >
              {WIDGET_MODES.map((m) => (
                <option key={m} value={m}>
                  {modeLabel(m)}
                </option>
              ))}
            </select>
          </label>
        </div>
        <ConfigForm type={type} mode={mode} config={config} output={output ?? null} onChange={change} />
        <label className="field">
          <span className="field__label">Sites allowed to embed it (frame-ancestors)</span>
          <textarea
            className={`input input--mono${frame.invalid.length ? ' has-error' : ''}`}
            rows={2}
            placeholder="any site (one origin per line, e.g. https://intranet.example.com, or 'self')"
            value={ancestors}
            onChange={(e) => setAncestors(e.target.value)}
            data-testid="widget-frame-ancestors"
          />
          {frame.invalid.length > 0 && <span className="field__error">Not an origin: {frame.invalid.join(', ')}</span>}
        </label>
        {widget ? (
          <EmbedTokens widgetId={widget.id} widgetName={widget.name} />
        ) : (
          <p className="small muted">Create the widget to make embed links.</p>
        )}
      </div>
      <div className="wd-editor__preview">
        <div className="wd-preview__head">
          <span className="section-title">Preview</span>
          <span className="spacer" />
          <select
            className="input input--auto"
            value={runId}
            onChange={(e) => setRunId(e.target.value)}
            data-testid="preview-run"
            aria-label="Run to preview"
            disabled={completedRuns.length === 0}
          >
            {completedRuns.length === 0 && <option value="">no completed production run</option>}
            {completedRuns.map((r) => (
              <option key={r.instanceId} value={r.instanceId}>
                {formatTime(r.completedAt)} · {r.instanceId.slice(0, 8)}
              </option>
            ))}
          </select>
        </div>
        <div className="wd-preview" data-testid="widget-preview" data-loading={previewing}>
          {runs === null ? (
            <div className="widget__message">Loading runs…</div>
          ) : completedRuns.length === 0 ? (
            <div className="widget__message" data-testid="preview-no-runs">
              <strong>No completed production run yet</strong>
              Execute the workflow (⚡ Execute in the editor) to preview a widget against its output.
            </div>
          ) : preview ? (
            <WidgetView answer={preview} testId="preview-widget" />
          ) : (
            <div className="widget__message">Loading the preview…</div>
          )}
        </div>
        {output !== undefined && (
          <details className="wd-output">
            <summary>Run output</summary>
            <pre className="json">{JSON.stringify(output, null, 2)}</pre>
          </details>
        )}
      </div>
    </div>
  );
}
