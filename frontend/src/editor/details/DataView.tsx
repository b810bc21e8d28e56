/**
 * One side of the node details view: a value drawn as a table, as JSON or as a tree. On the input side the
 * keys are draggable (PATH_MIME, and the subscript path as text for code editors) and, for the keyboard,
 * Enter on a key writes it into the template field last focused (`onPick`).
 */
import { useState, type DragEvent, type KeyboardEvent, type ReactNode } from 'react';

import { formatJson } from '../../shared/format';
import { PATH_MIME } from './fieldInsert';
import { cellText, childPath, subscriptPath, tableOf } from './paths';

export type ViewMode = 'table' | 'json' | 'tree';
const MODES: { id: ViewMode; label: string }[] = [
  { id: 'table', label: 'Table' },
  { id: 'json', label: 'JSON' },
  { id: 'tree', label: 'Tree' },
];

/** Where keys lead when dragged or picked: absent on the output side (nothing there to write into). */
export type PathSource = { onPick: (path: string) => void };

function startDrag(e: DragEvent, path: string) {
  e.dataTransfer.setData(PATH_MIME, path);
  e.dataTransfer.setData('text/plain', subscriptPath(path));
  e.dataTransfer.effectAllowed = 'copy';
}

function PathKey({ path, label, source, read }: { path: string; label: ReactNode; source?: PathSource; read?: boolean }) {
  if (!source) return <span className="ndv-key">{label}</span>;
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      source.onPick(path);
    }
  };
  return (
    <span
      className={`ndv-key ndv-key--path${read ? ' ndv-key--read' : ''}`}
      draggable
      tabIndex={0}
      role="button"
      title={`Drag into a field, or press Enter to write {{ ${path} }} into the field last used`}
      aria-label={`${path}${read ? ' (read by this node)' : ''}`}
      data-path={path}
      data-testid="ndv-path"
      onDragStart={(e) => startDrag(e, path)}
      onKeyDown={onKeyDown}
      onDoubleClick={() => source.onPick(path)}
    >
      {label}
      {read && <span className="ndv-read">read</span>}
    </span>
  );
}

function TableView({ value, root, source, reads }: { value: unknown; root: string; source?: PathSource; reads?: ReadonlySet<string> }) {
  const table = tableOf(value, root);
  if (!table) return <pre className="json">{formatJson(value)}</pre>;
  if (table.rows.length === 0) return <p className="muted small">empty</p>;
  const keyed = table.columns.length === 1 && table.columns[0] === 'value';
  return (
    <div className="ndv-table-wrap">
      <table className="table table--compact ndv-table" data-testid="ndv-table">
        <thead>
          <tr>
            <th>{Array.isArray(value) ? '#' : 'key'}</th>
            {keyed ? <th>value</th> : table.columns.map((c) => <th key={c}>{c}</th>)}
          </tr>
        </thead>
        <tbody>
          {table.rows.map((row) => (
            <tr key={row.key}>
              <th scope="row">
                <PathKey path={row.path('value')} label={row.key} source={source} read={root === 'ctx' && reads?.has(row.key)} />
              </th>
              {row.cells.map((cell, i) => (
                <td key={i} className="mono" title={typeof cell === 'string' ? cell : undefined}>
                  {keyed || !source ? cellText(cell) : <PathKey path={row.path(table.columns[i] ?? '')} label={cellText(cell)} source={source} />}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function TreeNode({ name, value, path, depth, source, read }: { name: string; value: unknown; path: string; depth: number; source?: PathSource; read?: boolean }) {
  const branch = value !== null && typeof value === 'object';
  const [open, setOpen] = useState(depth < 2);
  const entries: [string | number, unknown][] = branch ? (Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value)) : [];
  return (
    <li role="treeitem" aria-expanded={branch ? open : undefined} aria-selected={false} className="ndv-tree__item">
      <span className="ndv-tree__row">
        {branch ? (
          <button type="button" className="ndv-tree__toggle" aria-label={`${open ? 'Collapse' : 'Expand'} ${name}`} onClick={() => setOpen(!open)}>
            {open ? '▾' : '▸'}
          </button>
        ) : (
          <span className="ndv-tree__toggle" aria-hidden="true" />
        )}
        <PathKey path={path} label={name} source={source} read={read} />
        {branch ? (
          <span className="muted small">{Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`}</span>
        ) : (
          <span className={`ndv-tree__value ndv-tree__value--${value === null ? 'null' : typeof value}`}>{cellText(value, 200)}</span>
        )}
      </span>
      {branch && open && entries.length > 0 && (
        <ul role="group">
          {entries.map(([key, child]) => (
            <TreeNode key={key} name={String(key)} value={child} path={childPath(path, key)} depth={depth + 1} source={source} />
          ))}
        </ul>
      )}
    </li>
  );
}

function TreeView({ value, root, source, reads, label }: { value: unknown; root: string; source?: PathSource; reads?: ReadonlySet<string>; label: string }) {
  const entries: [string | number, unknown][] =
    value !== null && typeof value === 'object' ? (Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value)) : [];
  if (entries.length === 0) return <pre className="json">{formatJson(value)}</pre>;
  return (
    <ul className="ndv-tree" role="tree" aria-label={label} data-testid="ndv-tree">
      {entries.map(([key, child]) => (
        <TreeNode key={key} name={String(key)} value={child} path={childPath(root, key)} depth={0} source={source} read={root === 'ctx' && reads?.has(String(key))} />
      ))}
    </ul>
  );
}

export function DataView({
  value,
  root,
  mode,
  onMode,
  label,
  testId,
  source,
  reads,
  empty = 'nothing',
}: {
  value: unknown;
  /** The path of `value` itself: `ctx` for the input context, `ctx.<variable>` for an output. */
  root: string;
  mode: ViewMode;
  onMode: (mode: ViewMode) => void;
  label: string;
  testId: string;
  source?: PathSource;
  /** The context keys the node reads (marked on the input side). */
  reads?: ReadonlySet<string>;
  empty?: string;
}) {
  return (
    <div className="ndv-data" data-testid={testId} data-mode={mode}>
      <div className="ndv-modes" role="group" aria-label={`${label}: show as`}>
        {MODES.map((m) => (
          <button
            key={m.id}
            type="button"
            className={`ndv-mode${m.id === mode ? ' is-active' : ''}`}
            aria-pressed={m.id === mode}
            data-testid={`${testId}-mode-${m.id}`}
            onClick={() => onMode(m.id)}
          >
            {m.label}
          </button>
        ))}
      </div>
      {value === undefined || value === null ? (
        <pre className="json json--empty">{value === null ? 'null' : empty}</pre>
      ) : mode === 'json' ? (
        <pre className="json ndv-json" data-testid={`${testId}-json`}>
          {formatJson(value)}
        </pre>
      ) : mode === 'tree' ? (
        <TreeView value={value} root={root} source={source} reads={reads} label={label} />
      ) : (
        <TableView value={value} root={root} source={source} reads={reads} />
      )}
    </div>
  );
}
