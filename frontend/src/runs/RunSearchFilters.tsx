/** The run history's date range (local days, both ends included), run-id and label search. */
import './runSearch.css';

/** Epoch seconds of local midnight starting `day` ("YYYY-MM-DD"), or null when it is not a date. */
function startOfDay(day: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return null;
  const date = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isNaN(date.getTime()) ? null : date.getTime() / 1000;
}

/** `from`/`to` for GET /api/runs: from the start of `fromDay` to the end of `toDay` (local time). */
export function dayRange(fromDay: string, toDay: string): { from: number | null; to: number | null; error: string | null } {
  const from = fromDay ? startOfDay(fromDay) : null;
  const toStart = toDay ? startOfDay(toDay) : null;
  let to: number | null = null;
  if (toStart !== null) {
    const next = new Date(toStart * 1000);
    next.setDate(next.getDate() + 1); // the whole last day (a DST day is not 24 h)
    to = next.getTime() / 1000;
  }
  if ((fromDay && from === null) || (toDay && toStart === null)) return { from: null, to: null, error: 'Dates are YYYY-MM-DD.' };
  if (from !== null && to !== null && from >= to) return { from, to, error: 'The first day is after the last day.' };
  return { from, to, error: null };
}

const LABEL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** `customer=acme region=eu` (spaces or commas between pairs) as labels every listed run must carry. */
export function parseLabels(text: string): { labels: Record<string, string>; error: string | null } {
  const labels: Record<string, string> = {};
  for (const pair of text.split(/[\s,]+/).filter(Boolean)) {
    const at = pair.indexOf('=');
    const name = at < 0 ? pair : pair.slice(0, at);
    if (at < 0 || !LABEL_NAME.test(name)) {
      return { labels: {}, error: 'Labels are name=value (names: letters, digits, _ . -).' };
    }
    labels[name] = pair.slice(at + 1);
  }
  return { labels, error: null };
}

type Props = {
  fromDay: string;
  toDay: string;
  idPrefix: string;
  labelText: string;
  rangeError: string | null;
  idError: string | null;
  setFilter: (key: string, value: string) => void;
  onClear: () => void;
};

export function RunSearchFilters({ fromDay, toDay, idPrefix, labelText, rangeError, idError, setFilter, onClear }: Props) {
  return (
    <div className="run-search" data-testid="run-search">
      <label className="run-search__field">
        <span className="field__label">From</span>
        <input type="date" className="input input--auto" value={fromDay} onChange={(e) => setFilter('from', e.target.value)} data-testid="filter-from" />
      </label>
      <label className="run-search__field">
        <span className="field__label">To</span>
        <input type="date" className="input input--auto" value={toDay} onChange={(e) => setFilter('to', e.target.value)} data-testid="filter-to" />
      </label>
      <label className="run-search__field">
        <span className="field__label">Run id</span>
        <input
          type="search"
          className="input"
          placeholder="Paste a run id or its start"
          value={idPrefix}
          onChange={(e) => setFilter('q', e.target.value.trim())}
          data-testid="filter-run-id"
        />
      </label>
      <label className="run-search__field">
        <span className="field__label">Labels</span>
        <input
          type="search"
          className="input"
          placeholder="customer=acme"
          value={labelText}
          onChange={(e) => setFilter('labels', e.target.value)}
          data-testid="filter-labels"
        />
      </label>
      {(fromDay || toDay || idPrefix || labelText) && (
        <button
          type="button"
          className="btn btn--small btn--ghost"
          onClick={onClear}
          data-testid="filter-clear"
        >
          Clear
        </button>
      )}
      {(rangeError ?? idError) && (
        <span className="field__error" role="alert" data-testid="filter-error">
          {rangeError ?? idError}
        </span>
      )}
    </div>
  );
}
