/**
 * Renaming a context variable (a node's output variable) everywhere it is referred to: templates
 * (`{{ ctx.old.x }}`, only inside the braces), condition expressions, and Python code
 * (`ctx['old']`, `ctx["old"]`, `ctx.old`, `ctx.get('old')`). Pure: returns new nodes, or the same array
 * when nothing referred to the variable.
 */
import type { EditorNode } from './model';

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Replace the references to `ctx.<from>` in a piece of code (an expression, Python, a template's inside). */
export function renameInCode(code: string, from: string, to: string): string {
  const name = escape(from);
  return code
    .replace(new RegExp(`(\\bctx\\s*\\.\\s*)${name}(?![A-Za-z0-9_])`, 'g'), `$1${to}`)
    .replace(new RegExp(`(\\bctx\\s*\\[\\s*)(['"])${name}\\2(\\s*\\])`, 'g'), `$1$2${to}$2$3`)
    .replace(new RegExp(`(\\bctx\\s*\\.\\s*get\\s*\\(\\s*)(['"])${name}\\2`, 'g'), `$1$2${to}$2`);
}

/** The same in a template: only what stands between `{{` and `}}` is code; the text around is left alone. */
export function renameInTemplate(template: string, from: string, to: string): string {
  if (!template.includes('{{')) return template;
  return template.replace(/\{\{([\s\S]*?)\}\}/g, (_, inner: string) => `{{${renameInCode(inner, from, to)}}}`);
}

type Kind = 'template' | 'code';

function renameValue(value: unknown, from: string, to: string, kind: Kind): unknown {
  if (typeof value === 'string') return kind === 'code' ? renameInCode(value, from, to) : renameInTemplate(value, from, to);
  if (Array.isArray(value)) {
    const next = value.map((v) => renameValue(v, from, to, kind));
    return next.some((v, i) => v !== value[i]) ? next : value;
  }
  if (value !== null && typeof value === 'object') {
    let changed = false;
    const next: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      next[k] = renameValue(v, from, to, kind);
      if (next[k] !== v) changed = true;
    }
    return changed ? next : value;
  }
  return value;
}

/** A node's config with `ctx.<from>` renamed: python `code` and condition/switch `expression`s are code, the rest templates. */
export function renameInConfig(node: EditorNode, from: string, to: string): EditorNode['data']['config'] {
  const config = node.data.config;
  if (node.type === 'python') {
    const code = renameInCode(node.data.config.code, from, to);
    return code === node.data.config.code ? config : { code };
  }
  if (node.type === 'condition') {
    const branches = node.data.config.branches.map((b) => {
      const expression = renameInCode(b.expression, from, to);
      return expression === b.expression ? b : { ...b, expression };
    });
    return branches.some((b, i) => b !== node.data.config.branches[i]) ? { branches } : config;
  }
  if (node.type === 'switch') {
    const value = renameValue(node.data.config.value, from, to, 'template') as string;
    const cases = node.data.config.cases.map((c) => {
      const expression = c.expression === undefined ? undefined : renameInCode(c.expression, from, to);
      return expression === c.expression ? c : { ...c, expression };
    });
    const same = value === node.data.config.value && cases.every((c, i) => c === node.data.config.cases[i]);
    return same ? config : { value, cases };
  }
  return renameValue(config, from, to, 'template') as EditorNode['data']['config'];
}

/** Every node's config with the variable `from` renamed to `to` (the same array when nothing changed). */
export function renameVariableInNodes(nodes: readonly EditorNode[], from: string, to: string): EditorNode[] {
  if (from === to) return nodes as EditorNode[];
  let changed = false;
  const next = nodes.map((n) => {
    const config = renameInConfig(n, from, to);
    if (config === n.data.config) return n;
    changed = true;
    return { ...n, data: { ...n.data, config } } as EditorNode;
  });
  return changed ? next : (nodes as EditorNode[]);
}
