/** Table: formatted columns, click-to-sort headers, paging (page size from the data). Sorting and paging run here. */
import { useEffect, useMemo, useState } from 'react';

import { formatValue, nextSort, pageCount, pageRows, sortRows } from './format';
import type { TableData, TableSort } from './types';

export function TableWidget({ data, onPageRows }: { data: TableData; onPageRows?: (count: number) => void }) {
  const [sort, setSort] = useState<TableSort | null>(data.sort ?? null);
  const [page, setPage] = useState(0);
  const sortKey = sort ? (data.columns[sort.column]?.key ?? null) : null;
  const sorted = useMemo(() => sortRows(data.rows, sortKey, sort?.direction ?? 'asc'), [data.rows, sortKey, sort?.direction]);
  const pageSize = Math.max(1, data.pageSize || 25);
  const shown = pageRows(sorted, page, pageSize);
  const pages = pageCount(sorted.length, pageSize);
  const shownCount = shown.rows.length;
  useEffect(() => onPageRows?.(shownCount), [onPageRows, shownCount]);

  return (
    <div className="wtable" data-row-count={shown.rows.length} data-page={shown.page + 1} data-page-count={pages}>
      <div className="wtable__scroll">
        <table>
          <thead>
            <tr>
              {data.columns.map((col, i) => {
                const active = sort?.column === i;
                const dir = active ? sort.direction : null;
                return (
                  <th
                    key={col.key}
                    aria-sort={dir === 'asc' ? 'ascending' : dir === 'desc' ? 'descending' : 'none'}
                    className={`wtable__th wtable__th--${col.format}`}
                  >
                    <button
                      type="button"
                      onClick={() => {
                        setSort(nextSort(sort, i));
                        setPage(0);
                      }}
                      data-testid="widget-sort"
                      data-sort={dir ?? ''}
                    >
                      {col.label}
                      <span className="wtable__arrow" aria-hidden="true">
                        {dir === 'asc' ? '▲' : dir === 'desc' ? '▼' : '↕'}
                      </span>
                    </button>
                  </th>
                );
              })}
            </tr>
          </thead>
          <tbody>
            {shown.rows.length === 0 && (
              <tr>
                <td colSpan={Math.max(1, data.columns.length)} className="wtable__none">
                  No rows
                </td>
              </tr>
            )}
            {shown.rows.map((row, r) => (
              <tr key={shown.from + r} data-testid="widget-row">
                {data.columns.map((col) => (
                  <td key={col.key} className={`wtable__td--${col.format}`}>
                    {formatValue(row[col.key], col.format, { currency: col.currency })}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div className="wtable__foot">
        <span data-testid="widget-range">
          {shown.from}–{shown.to} of {sorted.length}
          {data.truncated ? ` (first ${data.rows.length.toLocaleString()} of ${data.total.toLocaleString()})` : ''}
        </span>
        {pages > 1 && (
          <span className="wtable__pager">
            <button type="button" disabled={shown.page === 0} onClick={() => setPage(shown.page - 1)} data-testid="widget-prev" aria-label="Previous page">
              ‹
            </button>
            <span>
              {shown.page + 1} / {pages}
            </span>
            <button type="button" disabled={shown.page >= pages - 1} onClick={() => setPage(shown.page + 1)} data-testid="widget-next" aria-label="Next page">
              ›
            </button>
          </span>
        )}
      </div>
    </div>
  );
}
