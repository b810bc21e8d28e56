/** Gantt bars from timeline rows (GET /api/runs/{id}/timeline): pure geometry in percent of the run's span. */
import type { TimelineRow } from '../api/types';

export type GanttBar = {
  key: string;
  nodeId: string;
  iteration: string;
  attempt: number;
  /** Its number within its retry, and how many partial retries came before it (as the API counts). */
  attemptInRetry: number;
  retry: number;
  status: TimelineRow['status'];
  left: number;
  width: number;
  start: number;
  end: number;
  open: boolean;
  workerId: string | null;
  takenOver: boolean;
  /** The node's label (its id when it has none). */
  label: string;
  /** Where the duration is written: in the bar when it fits, else beside it (after it, or before it near the end). */
  durationAt: 'inside' | 'after' | 'before';
};

export type Gantt = { bars: GanttBar[]; start: number; end: number; ticks: { at: number; left: number }[] };

const MIN_WIDTH = 0.4;
/** Below this width (percent of the track) a duration does not fit in its bar. */
const INSIDE_WIDTH = 12;
/** Past this (percent), a duration written after a bar would leave the track. */
const AFTER_LIMIT = 85;

function niceStep(span: number): number {
  const raw = span / 6;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

/** `now` closes bars of attempts still running; `labelOf` names a node (the editor's label). */
export function buildGantt(rows: readonly TimelineRow[], now: number, labelOf: (nodeId: string) => string = (id) => id): Gantt {
  const timed = rows.filter((r) => r.startedAt !== null);
  if (timed.length === 0) return { bars: [], start: now, end: now, ticks: [] };
  const start = Math.min(...timed.map((r) => r.startedAt as number));
  const end = Math.max(...timed.map((r) => r.completedAt ?? now), start + 0.001);
  const span = end - start;
  const bars = timed.map((r): GanttBar => {
    const s = r.startedAt as number;
    const e = r.completedAt ?? now;
    const left = ((s - start) / span) * 100;
    const width = Math.max(MIN_WIDTH, Math.min(100 - left, ((e - s) / span) * 100));
    return {
      key: `${r.nodeId}/${r.iteration}/${r.attempt}`,
      nodeId: r.nodeId,
      iteration: r.iteration,
      attempt: r.attempt,
      attemptInRetry: r.attemptInRetry || r.attempt,
      retry: r.retry ?? 0,
      status: r.status,
      left,
      width,
      start: s,
      end: e,
      open: r.completedAt === null,
      workerId: r.workerId ?? null,
      takenOver: r.takenOver ?? false,
      label: labelOf(r.nodeId) || r.nodeId,
      durationAt: width >= INSIDE_WIDTH ? 'inside' : left + width <= AFTER_LIMIT ? 'after' : 'before',
    };
  });
  bars.sort((a, b) => a.start - b.start || a.nodeId.localeCompare(b.nodeId));
  const step = niceStep(span);
  const ticks: { at: number; left: number }[] = [];
  for (let t = 0; t <= span + 1e-9; t += step) ticks.push({ at: t, left: (t / span) * 100 });
  return { bars, start, end, ticks };
}
