/**
 * Renders one widget data answer (docs/widgets.md "The data answer"), shared by the designer's preview and
 * the embed page. The root always carries data-widget-type and data-widget-status; a widget that is not
 * ready says why (empty / running / error with the config field) instead of rendering blank.
 */
import './widgets.css';

import { lazy, Suspense, useState, type ReactNode } from 'react';

import { JsonWidget } from './JsonWidget';
import { MetricWidget } from './MetricWidget';
import { TableWidget } from './TableWidget';
import { TextWidget } from './TextWidget';
import type { WidgetAnswer, WidgetStatus, WidgetType } from './types';

// Chart.js is only fetched when a chart is shown.
const ChartWidget = lazy(() => import('./ChartWidget'));

type Props = { answer: WidgetAnswer; fill?: boolean; testId?: string };

function dataAttributes(answer: WidgetAnswer, pageRows: number | null): Record<string, string | number> {
  if (answer.status !== 'ready' || !answer.data) return {};
  if (answer.type === 'chart') {
    return { 'data-point-count': answer.data.labels.length, 'data-series-count': answer.data.series.length };
  }
  if (answer.type === 'table') {
    // rows on the page shown (paging happens in the browser) and rows in the data
    return { 'data-row-count': pageRows ?? Math.min(answer.data.rows.length, answer.data.pageSize || 25), 'data-total-rows': answer.data.rows.length };
  }
  return {};
}

function StatusMessage({ status, answer }: { status: Exclude<WidgetStatus, 'ready'>; answer: WidgetAnswer }) {
  const err = answer.error;
  if (status === 'running') {
    return (
      <div className="widget__message widget__message--running" data-testid="widget-message">
        <span className="widget__spinner" aria-hidden="true" />
        <div>
          <strong>Running…</strong>
          <div className="widget__detail">Waiting for the run{answer.runId ? ` ${answer.runId.slice(0, 8)}` : ''} to finish.</div>
        </div>
      </div>
    );
  }
  if (status === 'empty') {
    return (
      <div className="widget__message widget__message--empty" data-testid="widget-message">
        <strong>No data yet</strong>
        <div className="widget__detail">{err?.message || 'The workflow has no completed production run yet.'}</div>
      </div>
    );
  }
  return (
    <div className="widget__message widget__message--error" role="alert" data-testid="widget-message">
      <strong>This widget cannot be shown</strong>
      {err?.field && (
        <div className="widget__field" data-testid="widget-error-field">
          {err.field}
        </div>
      )}
      <div className="widget__detail" data-testid="widget-error-message">
        {err?.message || 'The server sent no data.'}
      </div>
    </div>
  );
}

export function WidgetView({ answer, fill, testId = 'widget' }: Props) {
  // A ready answer without data is treated as an error rather than an empty box.
  const status: WidgetStatus = answer.status === 'ready' && !answer.data ? 'error' : answer.status;
  const [pageRows, setPageRows] = useState<number | null>(null);
  let body: ReactNode;
  if (status !== 'ready') {
    body = <StatusMessage status={status} answer={answer} />;
  } else {
    switch (answer.type) {
      case 'table':
        body = answer.data && <TableWidget key={JSON.stringify(answer.data.sort ?? null)} data={answer.data} onPageRows={setPageRows} />;
        break;
      case 'chart':
        body = answer.data && (
          <Suspense fallback={<div className="widget__message">Loading chart…</div>}>
            <ChartWidget data={answer.data} />
          </Suspense>
        );
        break;
      case 'metric':
        body = answer.data && <MetricWidget data={answer.data} />;
        break;
      case 'text':
        body = answer.data && <TextWidget data={answer.data} />;
        break;
      case 'json':
        body = answer.data && <JsonWidget data={answer.data} />;
        break;
    }
  }
  return (
    <div
      className={`widget widget--${answer.type}${fill ? ' widget--fill' : ''}`}
      data-testid={testId}
      data-widget-type={answer.type}
      data-widget-status={status}
      {...dataAttributes(answer, pageRows)}
    >
      {body}
    </div>
  );
}

/** The shape a failed request is shown in (same look as a widget error). */
export function errorAnswer(type: WidgetType, message: string, field: string | null = null): WidgetAnswer {
  return {
    widgetId: null,
    type,
    mode: 'run',
    status: 'error',
    runId: null,
    runStatus: null,
    runCompletedAt: null,
    data: null,
    error: { field, message },
  } as WidgetAnswer;
}

export type WidgetTypeName = WidgetType;
