/**
 * Completion of `ctx` names in a python node's code: typing `ctx`, `ctx.` or `ctx['sc` offers the paths the
 * graph defines (graph/context.ts knownPaths), written the way Python reads them (`ctx['score']['value']`).
 * Pure: the CodeMirror source is built from these functions, and tests call them directly.
 */
import type { Completion, CompletionContext, CompletionResult } from '@codemirror/autocomplete';

/** `ctx.score.tags[0]` or `ctx['odd key']` → ['score', 'tags', '0'] / ['odd key']. */
export function pathSegments(path: string): string[] {
  return path
    .replace(/^ctx\.?/, '')
    .split(/\.|\[|\]/)
    .filter(Boolean)
    .map((p) => p.replace(/^'(.*)'$/, '$1'));
}

export function toPythonAccess(path: string): string {
  return `ctx${pathSegments(path)
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `['${p}']`))
    .join('')}`;
}

/** What is typed after `ctx`: the segments already closed, and the start of the next one. */
export function parseTyped(token: string): { done: string[]; partial: string } | null {
  const rest = token.replace(/^ctx/, '');
  const done: string[] = [];
  const segment = /^(?:\.([A-Za-z_]\w*)(?=[.[]|$)|\['([^'\]]*)'\]|\["([^"\]]*)"\]|\[(\d+)\])/;
  let left = rest;
  for (let m = segment.exec(left); m && m[0].length > 0; m = segment.exec(left)) {
    const name = m[1] ?? m[2] ?? m[3] ?? m[4];
    // `.na` at the very end is the start of a name, not a closed segment.
    if (m[1] !== undefined && m[0].length === left.length) break;
    done.push(name as string);
    left = left.slice(m[0].length);
  }
  if (left === '') return { done, partial: '' };
  const partial = /^(?:\.(\w*)|\[['"]?([^'"\]]*))$/.exec(left);
  if (!partial) return null;
  return { done, partial: partial[1] ?? partial[2] ?? '' };
}

/**
 * The completions for a typed `ctx…` fragment, shallowest first. A fragment that already names a path
 * exactly is not offered again: with nothing longer to offer the list closes, so Enter types a newline.
 */
export function ctxOptions(paths: readonly string[], token: string): Completion[] {
  const typed = parseTyped(token);
  if (!typed) return [];
  const { done, partial } = typed;
  const options: { completion: Completion; depth: number }[] = [];
  const seen = new Set<string>();
  for (const path of paths) {
    const segments = pathSegments(path);
    if (segments.length <= done.length) continue;
    if (!done.every((s, i) => segments[i] === s)) continue;
    const next = segments[done.length] as string;
    if (!next.startsWith(partial)) continue;
    const label = toPythonAccess(path);
    if (label === token || seen.has(label)) continue;
    seen.add(label);
    options.push({ completion: { label, detail: path, type: 'variable' }, depth: segments.length });
  }
  return options.sort((a, b) => a.depth - b.depth).map((o) => o.completion);
}

/** The CodeMirror completion source over the paths `paths()` gives at the time of asking. */
export function ctxCompletionSource(paths: () => readonly string[]) {
  return (context: CompletionContext): CompletionResult | null => {
    const word = context.matchBefore(/ctx(?:\.\w*|\[[^\]\n]*\]?)*$/);
    if (!word) return null;
    const before = word.from > 0 ? context.state.sliceDoc(word.from - 1, word.from) : '';
    if (/[\w.]/.test(before)) return null; // `myctx.` or `obj.ctx` is not the context
    const options = ctxOptions(paths(), word.text);
    if (options.length === 0) return null;
    // Brackets and quotes the editor closed as they were typed (`ctx['sc|']`) are part of what is replaced.
    const after = /^(?:'\]|"\]|\])/.exec(context.state.sliceDoc(context.pos, context.pos + 2));
    const opened = /\[['"]?[^\]'"]*$/.test(word.text);
    return { from: word.from, to: opened && after ? context.pos + after[0].length : context.pos, options, filter: false };
  };
}
