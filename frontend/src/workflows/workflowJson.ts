/**
 * Workflow JSON files: what "Export" downloads (the SPEC §1 definition, without the server's id, version
 * and times) and what "Import" accepts (the same, or a whole GET /api/workflows/{id} answer), with errors
 * a person can act on. The server validates the graph itself; this only checks the file's shape.
 */
import { parser as jsonParser } from '@lezer/json';

import type { DefinitionJson } from '../graph/convert';

/** Fields of a definition; anything else in a file is refused by name (the API would refuse it too). */
const DEFINITION_KEYS = ['title', 'description', 'options', 'nodes', 'edges', 'notes'] as const;
/** Fields the server adds to a stored workflow: dropped on import, so an exported answer imports as is. */
const SERVER_KEYS = new Set(['id', 'version', 'createdAt', 'updatedAt']);

export type ParsedWorkflow = { ok: true; definition: DefinitionJson } | { ok: false; error: string };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** "line 3, column 7" for a character offset in `text`. */
export function lineAndColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `line ${line}, column ${column}`;
}

/** Where the JSON goes wrong: the browser's position when it gives one, else the first error the
 * Lezer JSON grammar (the one CodeMirror uses) finds. */
function errorOffset(text: string, message: string): number | null {
  const given = /at position (\d+)/.exec(message);
  if (given) return Number(given[1]);
  let found: number | null = null;
  jsonParser.parse(text).iterate({
    enter: (node) => {
      if (found === null && node.type.isError) found = node.from;
      return found === null;
    },
  });
  return found;
}

function syntaxError(text: string, err: unknown): string {
  const raw = err instanceof Error ? err.message : String(err);
  const offset = errorOffset(text, raw);
  // V8 echoes the whole text ('Unexpected token ',', "{…}" is not valid JSON'): keep the reason only.
  const reason = raw.replace(/, ".*" is not valid JSON$/s, '').replace(/ in JSON at position \d+.*$/s, '');
  return `This is not valid JSON${offset === null ? '' : ` (at ${lineAndColumn(text, offset)})`}: ${reason}`;
}

/** Read a workflow from text (a file's content or a paste). */
export function parseWorkflowJson(text: string): ParsedWorkflow {
  if (text.trim() === '') return { ok: false, error: 'Nothing to import: choose a file or paste the workflow JSON.' };
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    return { ok: false, error: syntaxError(text, err) };
  }
  if (!isObject(value)) return { ok: false, error: 'A workflow is a JSON object with "nodes" and "edges"; this is not an object.' };
  const unknown = Object.keys(value).filter((k) => !SERVER_KEYS.has(k) && !(DEFINITION_KEYS as readonly string[]).includes(k));
  if (unknown.length > 0) {
    return { ok: false, error: `Unknown field${unknown.length === 1 ? '' : 's'} ${unknown.map((k) => `"${k}"`).join(', ')}: a workflow has ${DEFINITION_KEYS.join(', ')}.` };
  }
  if (!Array.isArray(value.nodes)) return { ok: false, error: '"nodes" must be a list of nodes.' };
  if (value.edges !== undefined && !Array.isArray(value.edges)) return { ok: false, error: '"edges" must be a list of edges.' };
  const badNode = value.nodes.findIndex((n) => !isObject(n) || typeof n.id !== 'string' || typeof n.type !== 'string');
  if (badNode >= 0) return { ok: false, error: `nodes[${badNode}] needs a string "id" and "type".` };
  const edges: unknown[] = Array.isArray(value.edges) ? value.edges : [];
  const badEdge = edges.findIndex((e) => !isObject(e) || typeof e.source !== 'string' || typeof e.target !== 'string');
  if (badEdge >= 0) return { ok: false, error: `edges[${badEdge}] needs a string "source" and "target".` };
  if (value.title !== undefined && typeof value.title !== 'string') return { ok: false, error: '"title" must be text.' };
  const definition: Record<string, unknown> = { nodes: value.nodes, edges };
  for (const key of DEFINITION_KEYS) if (key !== 'nodes' && key !== 'edges' && value[key] !== undefined) definition[key] = value[key];
  return { ok: true, definition: definition as DefinitionJson };
}

/** The definition to export from a workflow as the API answers it (or as the editor holds it). */
export function exportable(workflow: DefinitionJson & Record<string, unknown>): DefinitionJson {
  const out: Record<string, unknown> = {};
  for (const key of DEFINITION_KEYS) {
    const value = workflow[key];
    if (value !== undefined && value !== null) out[key] = value;
  }
  out.nodes ??= [];
  out.edges ??= [];
  return out as DefinitionJson;
}

/** A file name from a title: "Order triage" -> "order-triage.json". */
export function fileNameFor(title: string | null | undefined): string {
  const slug = (title ?? '')
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80);
  return `${slug || 'workflow'}.json`;
}

/** Make the browser download `value` as pretty-printed JSON. */
export function downloadJson(fileName: string, value: unknown): void {
  const blob = new Blob([`${JSON.stringify(value, null, 2)}\n`], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.appendChild(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 1000);
}
