/** Metric: the figure, its label and unit, and the change against the previous run (arrow and percent). */
import { describeChange, formatValue } from './format';
import type { MetricData } from './types';

export function MetricWidget({ data }: { data: MetricData }) {
  const change = describeChange(data.change, data.changePercent);
  return (
    <div className="wmetric">
      <div className="wmetric__label" data-testid="metric-label">
        {data.label}
      </div>
      <div className="wmetric__value">
        <span data-testid="metric-value">{formatValue(data.value, data.format ?? 'number', { currency: data.currency })}</span>
        {data.unit && <span className="wmetric__unit">{data.unit}</span>}
      </div>
      {change ? (
        <div
          className={`wmetric__change wmetric__change--${change.direction}`}
          data-testid="metric-change"
          data-direction={change.direction}
          title={data.previous !== null ? `previous: ${formatValue(data.previous, data.format ?? 'number', { currency: data.currency })}` : undefined}
        >
          <span aria-hidden="true">{change.arrow}</span> {change.text}
          <span className="wmetric__vs"> vs previous run</span>
        </div>
      ) : (
        <div className="wmetric__change wmetric__change--none" data-testid="metric-change" data-direction="none">
          no previous run to compare
        </div>
      )}
    </div>
  );
}
