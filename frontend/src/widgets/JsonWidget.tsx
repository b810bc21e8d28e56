/** JSON: a collapsible tree; levels below `expandDepth` start open. */
import { useState } from 'react';

import type { JsonData } from './types';

function Scalar({ value }: { value: unknown }) {
  if (value === null) return <span className="wjson__null">null</span>;
  if (typeof value === 'string') return <span className="wjson__string">{JSON.stringify(value)}</span>;
  if (typeof value === 'number') return <span className="wjson__number">{String(value)}</span>;
  if (typeof value === 'boolean') return <span className="wjson__bool">{String(value)}</span>;
  return <span>{String(value)}</span>;
}

function Node({ name, value, depth, expandDepth }: { name: string | null; value: unknown; depth: number; expandDepth: number }) {
  const isList = Array.isArray(value);
  const isObj = typeof value === 'object' && value !== null;
  const [open, setOpen] = useState(depth < expandDepth);
  const label = name !== null && <span className="wjson__key">{name}: </span>;
  if (!isObj) {
    return (
      <div className="wjson__row">
        {label}
        <Scalar value={value} />
      </div>
    );
  }
  const entries: [string, unknown][] = isList ? (value as unknown[]).map((v, i) => [String(i), v]) : Object.entries(value as object);
  const summary = isList ? `[${entries.length}]` : `{${entries.length}}`;
  return (
    <div className="wjson__node" data-open={open}>
      <button type="button" className="wjson__toggle" onClick={() => setOpen((o) => !o)} aria-expanded={open} data-testid="json-toggle">
        <span className="wjson__caret" aria-hidden="true">
          {open ? '▾' : '▸'}
        </span>
        {label}
        <span className="wjson__summary">{summary}</span>
      </button>
      {open && (
        <div className="wjson__children">
          {entries.length === 0 && <div className="wjson__row wjson__null">{isList ? 'empty list' : 'empty object'}</div>}
          {entries.map(([k, v]) => (
            <Node key={k} name={k} value={v} depth={depth + 1} expandDepth={expandDepth} />
          ))}
        </div>
      )}
    </div>
  );
}

export function JsonWidget({ data }: { data: JsonData }) {
  return (
    <div className="wjson" data-testid="widget-json">
      <Node name={null} value={data.value} depth={0} expandDepth={data.expandDepth ?? 2} />
    </div>
  );
}
