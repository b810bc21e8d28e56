/** The Gantt chart of a run's node attempts. */
import { useMemo } from 'react';

import type { TimelineRow } from '../api/types';
import { formatDuration } from '../shared/format';
import { buildGantt } from './gantt';
import { attemptPlace } from './runReducer';

export function Timeline({ rows, now, labelOf }: { rows: readonly TimelineRow[]; now: number; labelOf?: (nodeId: string) => string }) {
  const gantt = useMemo(() => buildGantt(rows, now, labelOf), [rows, now, labelOf]);
  if (gantt.bars.length === 0) return <p className="muted">No node has started yet.</p>;
  return (
    <div className="gantt" data-testid="timeline">
      <div className="gantt__axis">
        <div className="gantt__label" />
        <div className="gantt__track">
          {gantt.ticks.map((t) => (
            <span key={t.at} className="gantt__tick" style={{ left: `${t.left}%` }}>
              {formatDuration(t.at)}
            </span>
          ))}
        </div>
      </div>
      {gantt.bars.map((bar) => (
        <div className="gantt__row" key={bar.key} data-testid="timeline-row" data-node-id={bar.nodeId}>
          <div className="gantt__label" title={bar.label === bar.nodeId ? bar.nodeId : `${bar.label} (${bar.nodeId})`}>
            <span className="truncate" data-testid="timeline-label">
              {bar.label}
            </span>
            {bar.iteration && <span className="muted small"> #{bar.iteration}</span>}
            {bar.attempt > 1 && (
              <span className="muted small" data-testid="timeline-attempt">
                {' '}
                try {attemptPlace(bar)}
              </span>
            )}
            {bar.takenOver && (
              <span className="muted small" data-testid="timeline-taken-over">
                {' '}
                · taken over
              </span>
            )}
          </div>
          <div className="gantt__track">
            <div
              className={`gantt__bar gantt__bar--${bar.status.toLowerCase()}${bar.open ? ' is-open' : ''}`}
              style={{ left: `${bar.left}%`, width: `${bar.width}%` }}
              data-status={bar.status}
              title={`${bar.label} · attempt ${attemptPlace(bar)} · ${bar.status} · ${formatDuration(bar.end - bar.start)}${
                bar.workerId ? ` · worker ${bar.workerId}` : ''
              }${bar.takenOver ? ' · its worker stopped and another took it over' : ''}`}
            >
              {bar.durationAt === 'inside' && <span className="gantt__dur">{formatDuration(bar.end - bar.start)}</span>}
            </div>
            {bar.durationAt !== 'inside' && (
              <span
                className="gantt__dur gantt__dur--outside"
                data-testid="timeline-duration-outside"
                style={bar.durationAt === 'after' ? { left: `calc(${bar.left + bar.width}% + 4px)` } : { right: `calc(${100 - bar.left}% + 4px)` }}
              >
                {formatDuration(bar.end - bar.start)}
              </span>
            )}
          </div>
        </div>
      ))}
    </div>
  );
}
