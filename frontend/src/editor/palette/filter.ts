/** The palette's search: which node types match what was typed, best first. Pure. */
import { NODE_TYPE_INFO, PALETTE_ORDER, type NodeType } from '../../graph/model';

/** Extra words a user may type for a type (n8n / Windmill vocabulary). */
const ALIASES: Readonly<Record<NodeType, string>> = {
  start: 'trigger begin input',
  python: 'code script function transform',
  dataQuery: 'sql database db http request api fetch',
  http: 'http request api fetch rest url get post webhook call',
  workflow: 'sub-workflow subworkflow child call invoke execute flow',
  condition: 'if branch switch router filter',
  loop: 'each for iterate map split batch',
  delay: 'wait sleep timer pause',
  wait: 'webhook callback form resume pause human approval input',
  end: 'output finish return respond stop',
  switch: 'route router case match regex branch',
  set: 'edit fields assign map rename shape object',
};

/**
 * Types whose title starts with the query first, then those whose title, description, type name or
 * aliases contain every word of it; an empty query gives every type in palette order.
 */
export function filterPalette(query: string): NodeType[] {
  const words = query.toLowerCase().trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return [...PALETTE_ORDER];
  const first = words.join(' ');
  const scored: { type: NodeType; score: number }[] = [];
  PALETTE_ORDER.forEach((type, order) => {
    const info = NODE_TYPE_INFO[type];
    const title = info.title.toLowerCase();
    const haystack = `${title} ${type.toLowerCase()} ${info.description.toLowerCase()} ${ALIASES[type]}`;
    if (!words.every((w) => haystack.includes(w))) return;
    const score = title.startsWith(first) ? 0 : title.includes(first) ? 1 : 2;
    scored.push({ type, score: score * 100 + order });
  });
  return scored.sort((a, b) => a.score - b.score).map((s) => s.type);
}
