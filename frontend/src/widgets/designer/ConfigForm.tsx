/** The per-type config form (docs/widgets.md "config by type") plus the sync inputs of a sync widget. */
import { useMemo, useState } from 'react';

import { suggestPaths, suggestRowPaths, type PathSuggestion } from '../paths';
import { CHART_TYPES, INPUT_TYPES, VALUE_FORMATS, type SyncInput, type WidgetMode, type WidgetType } from '../types';
import type { Config } from './config';
import { parseDefault } from './config';
import { PathInput } from './PathInput';

type Props = { type: WidgetType; mode: WidgetMode; config: Config; output: unknown; onChange: (config: Config) => void };

type Column = { path: string; label?: string; format?: string; currency?: string };
type Series = { path: string; label?: string };

const str = (v: unknown, fallback = '') => (typeof v === 'string' ? v : fallback);
const num = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);

/** The ISO 4217 code a `currency` value shows in; empty keeps the default (USD). */
function CurrencyInput({ value, onChange, testId }: { value: string; onChange: (v: string | undefined) => void; testId: string }) {
  return (
    <input
      className="input input--mono input--auto"
      size={5}
      maxLength={3}
      placeholder="USD"
      value={value}
      aria-label="Currency (ISO 4217 code)"
      title="Currency: an ISO 4217 code such as EUR, GBP or JPY"
      onChange={(e) => {
        const code = e.target.value.toUpperCase().replace(/[^A-Z]/g, '');
        onChange(code === '' ? undefined : code);
      }}
      data-testid={testId}
    />
  );
}

function FormatSelect({ value, onChange, testId }: { value: string; onChange: (v: string) => void; testId: string }) {
  return (
    <select className="input input--auto" value={value} onChange={(e) => onChange(e.target.value)} data-testid={testId} aria-label="Format">
      {VALUE_FORMATS.map((f) => (
        <option key={f} value={f}>
          {f}
        </option>
      ))}
    </select>
  );
}

export function ConfigForm({ type, mode, config, output, onChange }: Props) {
  const set = (key: string, value: unknown) => onChange({ ...config, [key]: value });
  const patch = (changes: Config) => onChange({ ...config, ...changes });
  const rowsPath = str(config.rowsPath);
  const all = useMemo(() => suggestPaths(output), [output]);
  const rowPaths = useMemo(() => suggestRowPaths(output, rowsPath), [output, rowsPath]);

  return (
    <div className="wd-form" data-testid="widget-config-form">
      {type === 'table' && <TableForm config={config} set={set} patch={patch} all={all} rowPaths={rowPaths} />}
      {type === 'chart' && <ChartForm config={config} set={set} patch={patch} all={all} rowPaths={rowPaths} />}
      {type === 'metric' && (
        <>
          <label className="field">
            <span className="field__label">Value path (a number)</span>
            <PathInput value={str(config.valuePath)} onChange={(v) => set('valuePath', v)} suggestions={all} kinds={['number']} testId="cfg-value-path" />
          </label>
          <div className="field-row">
            <label className="field">
              <span className="field__label">Label</span>
              <input className="input" value={str(config.label)} onChange={(e) => set('label', e.target.value)} data-testid="cfg-label" />
            </label>
            <label className="field">
              <span className="field__label">Format</span>
              <FormatSelect value={str(config.format, 'number')} onChange={(v) => set('format', v)} testId="cfg-format" />
            </label>
            {config.format === 'currency' && (
              <label className="field field--narrow">
                <span className="field__label">Currency</span>
                <CurrencyInput value={str(config.currency)} onChange={(v) => set('currency', v)} testId="cfg-currency" />
              </label>
            )}
            <label className="field">
              <span className="field__label">Unit</span>
              <input className="input" maxLength={16} value={str(config.unit)} onChange={(e) => set('unit', e.target.value)} data-testid="cfg-unit" />
            </label>
          </div>
          <p className="field__hint">The change is against the previous completed production run.</p>
        </>
      )}
      {type === 'text' && (
        <label className="field">
          <span className="field__label">Path (a string of Markdown)</span>
          <PathInput value={str(config.path)} onChange={(v) => set('path', v)} suggestions={all} kinds={['string']} testId="cfg-path" />
        </label>
      )}
      {type === 'json' && (
        <div className="field-row">
          <label className="field">
            <span className="field__label">Path</span>
            <PathInput value={str(config.path)} onChange={(v) => set('path', v)} suggestions={all} testId="cfg-path" />
          </label>
          <label className="field field--narrow">
            <span className="field__label">Open levels</span>
            <input className="input" type="number" min={0} max={10} value={num(config.expandDepth, 2)} onChange={(e) => set('expandDepth', Number(e.target.value))} data-testid="cfg-expand-depth" />
          </label>
        </div>
      )}
      {mode === 'sync' && <SyncForm config={config} set={set} />}
    </div>
  );
}

type SubProps = { config: Config; set: (key: string, value: unknown) => void; patch: (changes: Config) => void; all: PathSuggestion[]; rowPaths: PathSuggestion[] };

function TableForm({ config, set, patch, all, rowPaths }: SubProps) {
  const columns = (Array.isArray(config.columns) ? config.columns : []) as Column[];
  const setColumn = (i: number, patch: Partial<Column>) => set('columns', columns.map((c, j) => (j === i ? { ...c, ...patch } : c)));
  const sort = config.sort as { column: number; direction: string } | null | undefined;
  return (
    <>
      <div className="field-row">
        <label className="field">
          <span className="field__label">Rows (a list of objects)</span>
          <PathInput value={str(config.rowsPath)} onChange={(v) => set('rowsPath', v)} suggestions={all} kinds={['rows']} testId="cfg-rows-path" />
        </label>
        <label className="field field--narrow">
          <span className="field__label">Page size</span>
          <input className="input" type="number" min={1} max={500} value={num(config.pageSize, 25)} onChange={(e) => set('pageSize', Number(e.target.value))} data-testid="cfg-page-size" />
        </label>
      </div>
      <div className="section-title">Columns</div>
      {columns.map((col, i) => (
        <div className="wd-line" key={i} data-testid="cfg-column">
          <PathInput value={col.path} onChange={(v) => setColumn(i, { path: v })} suggestions={rowPaths} placeholder="path in the row" testId={`cfg-column-path-${i}`} label={`Column ${i + 1} path`} />
          <input className="input" placeholder={col.path || 'label'} value={col.label ?? ''} onChange={(e) => setColumn(i, { label: e.target.value })} data-testid={`cfg-column-label-${i}`} aria-label={`Column ${i + 1} label`} />
          <FormatSelect value={col.format ?? 'text'} onChange={(v) => setColumn(i, { format: v })} testId={`cfg-column-format-${i}`} />
          {col.format === 'currency' && (
            <CurrencyInput value={col.currency ?? ''} onChange={(v) => setColumn(i, { currency: v })} testId={`cfg-column-currency-${i}`} />
          )}
          <button type="button" className="icon-btn" aria-label={`Remove column ${i + 1}`} disabled={columns.length <= 1} onClick={() => {
            const next = columns.filter((_, j) => j !== i);
            patch(sort && sort.column >= next.length ? { columns: next, sort: null } : { columns: next });
          }}>
            ×
          </button>
        </div>
      ))}
      <div className="btn-row">
        <button type="button" className="btn btn--small" disabled={columns.length >= 50} onClick={() => set('columns', [...columns, { path: '', format: 'text' }])} data-testid="cfg-add-column">
          + Column
        </button>
        <span className="spacer" />
        <label className="small muted">
          Sort by{' '}
          <select className="input input--auto" value={sort ? String(sort.column) : ''} data-testid="cfg-sort-column" onChange={(e) => set('sort', e.target.value === '' ? null : { column: Number(e.target.value), direction: sort?.direction ?? 'asc' })}>
            <option value="">(as in the output)</option>
            {columns.map((c, i) => (
              <option key={i} value={i}>
                {c.label || c.path || `column ${i + 1}`}
              </option>
            ))}
          </select>
        </label>
        {sort && (
          <select className="input input--auto" value={sort.direction} aria-label="Sort direction" onChange={(e) => set('sort', { ...sort, direction: e.target.value })} data-testid="cfg-sort-direction">
            <option value="asc">ascending</option>
            <option value="desc">descending</option>
          </select>
        )}
      </div>
    </>
  );
}

function ChartForm({ config, set, patch, all, rowPaths }: SubProps) {
  const series = (Array.isArray(config.series) ? config.series : []) as Series[];
  const chartType = str(config.chartType, 'bar');
  const setSeries = (i: number, patch: Partial<Series>) => set('series', series.map((s, j) => (j === i ? { ...s, ...patch } : s)));
  const max = chartType === 'pie' ? 1 : 10;
  return (
    <>
      <div className="field-row">
        <label className="field field--narrow">
          <span className="field__label">Chart</span>
          <select className="input" value={chartType} data-testid="cfg-chart-type" onChange={(e) => {
            const next = e.target.value;
            // a pie takes exactly one series
            patch(next === 'pie' && series.length > 1 ? { chartType: next, series: series.slice(0, 1) } : { chartType: next });
          }}>
            {CHART_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span className="field__label">Rows (a list of objects)</span>
          <PathInput value={str(config.rowsPath)} onChange={(v) => set('rowsPath', v)} suggestions={all} kinds={['rows']} testId="cfg-rows-path" />
        </label>
      </div>
      <label className="field">
        <span className="field__label">Label (x axis) per row</span>
        <PathInput value={str(config.labelPath)} onChange={(v) => set('labelPath', v)} suggestions={rowPaths} kinds={['string', 'number']} placeholder="path in the row" testId="cfg-label-path" />
      </label>
      <div className="section-title">Series (numbers per row)</div>
      {series.map((s, i) => (
        <div className="wd-line" key={i} data-testid="cfg-series">
          <PathInput value={s.path} onChange={(v) => setSeries(i, { path: v })} suggestions={rowPaths} kinds={['number', 'null']} placeholder="path in the row" testId={`cfg-series-path-${i}`} label={`Series ${i + 1} path`} />
          <input className="input" placeholder={s.path || 'label'} value={s.label ?? ''} onChange={(e) => setSeries(i, { label: e.target.value })} data-testid={`cfg-series-label-${i}`} aria-label={`Series ${i + 1} label`} />
          <button type="button" className="icon-btn" aria-label={`Remove series ${i + 1}`} disabled={series.length <= 1} onClick={() => set('series', series.filter((_, j) => j !== i))}>
            ×
          </button>
        </div>
      ))}
      <button type="button" className="btn btn--small" disabled={series.length >= max} onClick={() => set('series', [...series, { path: '' }])} data-testid="cfg-add-series">
        + Series
      </button>
    </>
  );
}

function SyncForm({ config, set }: { config: Config; set: (key: string, value: unknown) => void }) {
  const inputs = (Array.isArray(config.inputs) ? config.inputs : []) as SyncInput[];
  const [defaults, setDefaults] = useState<Record<number, { text: string; error: string | null }>>({});
  const setInput = (i: number, patch: Partial<SyncInput>) => set('inputs', inputs.map((inp, j) => (j === i ? { ...inp, ...patch } : inp)));
  const defaultText = (i: number, inp: SyncInput) => defaults[i]?.text ?? (inp.default === undefined ? '' : typeof inp.default === 'string' ? inp.default : JSON.stringify(inp.default));
  return (
    <div className="wd-sync">
      <div className="section-title">Sync run</div>
      <label className="field field--narrow">
        <span className="field__label">Wait up to (seconds)</span>
        <input className="input" type="number" min={0} max={30} value={num(config.waitSeconds, 10)} onChange={(e) => set('waitSeconds', Number(e.target.value))} data-testid="cfg-wait-seconds" />
      </label>
      <p className="field__hint">
        Each query parameter of the embed URL becomes a field of the run input. Unmapped parameters are refused.
      </p>
      {inputs.map((inp, i) => {
        const d = defaults[i];
        return (
          <div className="wd-line wd-line--input" key={i} data-testid="cfg-input">
            <input className="input input--mono" placeholder="param" value={inp.param} onChange={(e) => setInput(i, { param: e.target.value })} aria-label="Query parameter" />
            <span className="muted">→ input.</span>
            <input className="input input--mono" placeholder="field" value={inp.field} onChange={(e) => setInput(i, { field: e.target.value })} aria-label="Input field" />
            <select className="input input--auto" value={inp.type} onChange={(e) => setInput(i, { type: e.target.value as SyncInput['type'] })} aria-label="Type">
              {INPUT_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
            <label className="small">
              <input type="checkbox" checked={!!inp.required} onChange={(e) => setInput(i, { required: e.target.checked })} /> required
            </label>
            <input
              className={`input${d?.error ? ' has-error' : ''}`}
              placeholder="default"
              title={d?.error ?? 'default value'}
              value={defaultText(i, inp)}
              aria-label="Default"
              onChange={(e) => {
                const text = e.target.value;
                try {
                  setInput(i, { default: parseDefault(inp.type, text) });
                  setDefaults((m) => ({ ...m, [i]: { text, error: null } }));
                } catch (err) {
                  setDefaults((m) => ({ ...m, [i]: { text, error: err instanceof Error ? err.message : String(err) } }));
                }
              }}
            />
            <button type="button" className="icon-btn" aria-label="Remove input" onClick={() => { set('inputs', inputs.filter((_, j) => j !== i)); setDefaults({}); }}>
              ×
            </button>
          </div>
        );
      })}
      <button type="button" className="btn btn--small" onClick={() => set('inputs', [...inputs, { param: '', field: '', type: 'string' }])} data-testid="cfg-add-input">
        + Input
      </button>
    </div>
  );
}
