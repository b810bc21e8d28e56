/** A query's result: SQL rows as a table, an HTTP answer as its status and body. */
import { formatValue } from '../widgets/format';
import { JsonView } from '../shared/ui/JsonView';
import { isSqlResult, type PreviewResult } from './api';

export function ResultTable({ result }: { result: PreviewResult }) {
  if (!isSqlResult(result)) {
    return (
      <div className="query-result" data-testid="query-result">
        <div className="small">
          HTTP <strong data-testid="result-status">{result.status}</strong>
        </div>
        <JsonView value={result.body} />
      </div>
    );
  }
  return (
    <div className="query-result" data-testid="query-result">
      <div className="muted small" data-testid="result-count">
        {result.rowCount} row{result.rowCount === 1 ? '' : 's'}
        {result.truncated ? ' (more were left out: the row limit was reached)' : ''}
      </div>
      {result.columns.length > 0 && (
        <div className="query-result__scroll">
          <table className="table table--compact" data-testid="result-table">
            <thead>
              <tr>
                {result.columns.map((c) => (
                  <th key={c}>{c}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {result.rows.map((row, i) => (
                <tr key={i} data-testid="result-row">
                  {result.columns.map((c) => (
                    <td key={c} className="mono">
                      {formatValue(Object.hasOwn(row, c) ? row[c] : null, null)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
