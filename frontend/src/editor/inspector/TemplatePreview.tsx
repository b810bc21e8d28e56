/**
 * Under a template or expression field: what it resolves to against the context the node saw in the
 * last test run (resolved on the server, by the same sandboxed Jinja2 as runs), or "no test data yet".
 */
import { createContext, useContext, useEffect, useState } from 'react';

import { ApiError } from '../../api/client';
import { previewTemplate, type PreviewKind } from './previewApi';

/** The node's context from the last run (`null`: no run yet), provided by the node panel. */
export const PreviewContext = createContext<Record<string, unknown> | null | undefined>(undefined);

type Result = { ok: true; value: unknown } | { ok: false; error: string };

const cache = new WeakMap<object, Map<string, Result>>();
const DEBOUNCE_MS = 300;
const MAX_SHOWN = 300;

function cached(ctx: object, key: string): Result | undefined {
  return cache.get(ctx)?.get(key);
}

function remember(ctx: object, key: string, result: Result): void {
  let map = cache.get(ctx);
  if (!map) cache.set(ctx, (map = new Map()));
  if (map.size > 200) map.clear();
  map.set(key, result);
}

export function shown(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value) ?? String(value);
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}…` : text;
}

export function TemplatePreview({ source, kind, switchValue }: { source: string; kind: PreviewKind; switchValue?: string | undefined }) {
  const ctx = useContext(PreviewContext);
  const key = `${kind}\u0000${source}\u0000${switchValue ?? ''}`;
  const wanted = ctx !== undefined && ctx !== null && source.trim() !== '' && (kind === 'expression' || source.includes('{{'));
  const [result, setResult] = useState<Result | null>(() => (wanted && ctx ? (cached(ctx, key) ?? null) : null));

  useEffect(() => {
    if (!wanted || !ctx) return;
    const known = cached(ctx, key);
    setResult(known ?? null);
    if (known) return;
    const abort = new AbortController();
    const timer = window.setTimeout(() => {
      previewTemplate(kind, source, ctx, abort.signal, switchValue)
        .then((value) => ({ ok: true, value }) as Result)
        .catch((err: unknown) => ({ ok: false, error: err instanceof ApiError ? err.detail : String(err) }) as Result)
        .then((r) => {
          if (abort.signal.aborted) return;
          if (r.ok || !/abort/i.test(r.error)) remember(ctx, key, r);
          setResult(r);
        });
    }, DEBOUNCE_MS);
    return () => {
      abort.abort();
      window.clearTimeout(timer);
    };
  }, [wanted, ctx, key, kind, source, switchValue]);

  if (ctx === undefined) return null; // outside a node panel
  if (ctx === null) {
    return (
      <div className="preview preview--empty" data-testid="template-preview" data-state="empty">
        No test data yet: run a test to see what this resolves to.
      </div>
    );
  }
  if (!wanted) return null;
  if (result === null) {
    return (
      <div className="preview preview--loading" data-testid="template-preview" data-state="loading">
        Resolving…
      </div>
    );
  }
  return result.ok ? (
    <div className="preview" data-testid="template-preview" data-state="ok" title="What this resolves to against the last test run">
      <span className="preview__arrow">→</span> <code>{shown(result.value)}</code>
    </div>
  ) : (
    <div className="preview preview--error" data-testid="template-preview" data-state="error">
      ⚠ {result.error}
    </div>
  );
}
