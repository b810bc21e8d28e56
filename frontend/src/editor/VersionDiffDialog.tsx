/**
 * Two versions of a workflow side by side: the nodes added, removed and changed (each changed field, before
 * and after), the edges, the workflow's settings; and "Restore this version" for the older one.
 */
import { useEffect, useMemo, useState } from 'react';

import { workflows } from '../api/endpoints';
import type { VersionSummary, Workflow } from '../api/types';
import { diffVersions, isEmptyDiff, type FieldChange, type VersionDiff } from '../graph/versionDiff';
import { formatDateTime } from '../shared/format';
import { errorMessage } from '../shared/toasts';
import { Modal } from '../shared/ui/Modal';

function shown(value: unknown): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

function FieldRows({ fields }: { fields: FieldChange[] }) {
  return (
    <>
      {fields.map((f) => (
        <tr key={f.path} data-testid="diff-field" data-path={f.path}>
          <th scope="row" className="mono small">
            {f.path}
          </th>
          <td className={f.before === undefined ? 'diff__empty' : 'diff__before'}>
            <pre>{shown(f.before)}</pre>
          </td>
          <td className={f.after === undefined ? 'diff__empty' : 'diff__after'}>
            <pre>{shown(f.after)}</pre>
          </td>
        </tr>
      ))}
    </>
  );
}

export function DiffView({ diff, before, after }: { diff: VersionDiff; before: number; after: number }) {
  if (isEmptyDiff(diff)) return <p className="muted" data-testid="diff-none">These versions do the same (only positions or notes may differ).</p>;
  const verb = { added: 'added', removed: 'removed', changed: 'changed' } as const;
  return (
    <div className="diff" data-testid="version-diff">
      <table className="table table--compact diff__table">
        <thead>
          <tr>
            <th />
            <th>v{before}</th>
            <th>v{after}</th>
          </tr>
        </thead>
        <tbody>
          {diff.workflow.length > 0 && (
            <>
              <tr className="diff__group">
                <th colSpan={3}>Workflow settings</th>
              </tr>
              <FieldRows fields={diff.workflow} />
            </>
          )}
          {diff.nodes.map((n) => (
            <NodeRows key={n.id} change={n} verb={verb[n.kind]} />
          ))}
          {(diff.edgesAdded.length > 0 || diff.edgesRemoved.length > 0) && (
            <tr className="diff__group">
              <th colSpan={3}>Connections</th>
            </tr>
          )}
          {diff.edgesRemoved.map((e) => (
            <tr key={`-${e.id}`} data-testid="diff-edge" data-kind="removed">
              <th scope="row" className="mono small">
                {e.source} → {e.target}
              </th>
              <td className="diff__before">{e.sourceHandle ?? 'default'}</td>
              <td className="diff__empty" />
            </tr>
          ))}
          {diff.edgesAdded.map((e) => (
            <tr key={`+${e.id}`} data-testid="diff-edge" data-kind="added">
              <th scope="row" className="mono small">
                {e.source} → {e.target}
              </th>
              <td className="diff__empty" />
              <td className="diff__after">{e.sourceHandle ?? 'default'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function NodeRows({ change, verb }: { change: VersionDiff['nodes'][number]; verb: string }) {
  return (
    <>
      <tr className={`diff__group diff__group--${change.kind}`} data-testid="diff-node" data-node-id={change.id} data-kind={change.kind}>
        <th colSpan={3}>
          {change.label} <span className="muted small mono">({change.type})</span> · {verb}
        </th>
      </tr>
      <FieldRows fields={change.fields} />
    </>
  );
}

type Loaded = { a: Workflow; b: Workflow } | { error: string } | null;

export function VersionDiffDialog({
  workflowId,
  versions,
  initial,
  onRestore,
  onClose,
}: {
  workflowId: string;
  versions: VersionSummary[];
  /** The two versions compared first: [older, newer]. */
  initial: [number, number];
  onRestore: (version: number) => void;
  onClose: () => void;
}) {
  const [pair, setPair] = useState<[number, number]>(initial);
  const [loaded, setLoaded] = useState<Loaded>(null);
  useEffect(() => {
    let live = true;
    setLoaded(null);
    Promise.all([workflows.version(workflowId, pair[0]), workflows.version(workflowId, pair[1])])
      .then(([a, b]) => live && setLoaded({ a, b }))
      .catch((err: unknown) => live && setLoaded({ error: errorMessage(err) }));
    return () => {
      live = false;
    };
  }, [workflowId, pair]);
  const diff = useMemo(() => (loaded && 'a' in loaded ? diffVersions(loaded.a, loaded.b) : null), [loaded]);
  const latest = versions[0]?.version;
  const pick = (side: 0 | 1, version: number) => setPair((p) => (side === 0 ? [version, p[1]] : [p[0], version]));
  const select = (side: 0 | 1) => (
    <select className="input input--auto" value={pair[side]} onChange={(e) => pick(side, Number(e.target.value))} data-testid={`diff-version-${side === 0 ? 'a' : 'b'}`} aria-label={side === 0 ? 'Older version' : 'Newer version'}>
      {versions.map((v) => (
        <option key={v.version} value={v.version}>
          v{v.version} · {formatDateTime(v.createdAt)}
          {v.author ? ` · ${v.author}` : ''}
          {v.message ? ` · ${v.message}` : ''}
        </option>
      ))}
    </select>
  );
  return (
    <Modal
      title="Compare versions"
      onClose={onClose}
      testId="version-diff-dialog"
      wide
      footer={
        <>
          <button type="button" className="btn btn--ghost" onClick={onClose}>
            Close
          </button>
          {pair[0] !== latest && (
            <button type="button" className="btn btn--primary" onClick={() => onRestore(pair[0])} data-testid="diff-restore">
              Restore v{pair[0]}
            </button>
          )}
        </>
      }
    >
      <div className="btn-row">
        {select(0)} <span aria-hidden>→</span> {select(1)}
      </div>
      {loaded === null && <p className="muted">Loading…</p>}
      {loaded && 'error' in loaded && <div className="error-box">{loaded.error}</div>}
      {diff && <DiffView diff={diff} before={pair[0]} after={pair[1]} />}
    </Modal>
  );
}
