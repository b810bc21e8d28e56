/** The mark of a run that passed its options.slaSeconds unfinished (run history, run detail, the editor's run tab). */
import { formatTime } from '../shared/format';

export function SlaBadge({ at, testId = 'sla-breached' }: { at: number | null | undefined; testId?: string }) {
  if (at === null || at === undefined) return null;
  return (
    <span className="pill pill--sla" data-testid={testId} title={`Still unfinished when its SLA passed (${formatTime(at)})`}>
      SLA breached
    </span>
  );
}
