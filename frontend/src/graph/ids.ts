/**
 * Ids, always within SPEC §1's `[A-Za-z0-9_-]{1,64}`: nodes get readable ids made from their label
 * (`count_items`, `count_items_2`), edges and branches short random ones.
 */

export const NODE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const VARIABLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** Context keys a node id (its default output variable) must not take (the server refuses them). */
export const RESERVED_VARIABLES: ReadonlySet<string> = new Set(['input', 'output', 'loop']);

function shortRandom(length = 6): string {
  return crypto.randomUUID().replace(/-/g, '').slice(0, length);
}

/** `python_3f2a9c`: the prefix (sanitised) and six random hex digits, unique among `taken`. */
export function newId(prefix: string, taken: ReadonlySet<string> = new Set()): string {
  const clean = prefix.replace(/[^A-Za-z0-9_-]/g, '').slice(0, 40) || 'node';
  for (;;) {
    const id = `${clean}_${shortRandom()}`;
    if (!taken.has(id)) return id;
  }
}

export function newEdgeId(taken: ReadonlySet<string> = new Set()): string {
  return newId('e', taken);
}

export function isValidNodeId(id: string): boolean {
  return NODE_ID_PATTERN.test(id);
}

/** `Count items!` -> `count_items`: lower case, runs of other characters become one `_`, at most 56 chars. */
export function slugOf(label: string): string {
  const slug = label
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 56)
    .replace(/_+$/, '');
  return slug || 'node';
}

/**
 * A readable node id from `label`, unique among `taken`: `count_items`, then `count_items_2`, `_3`...
 * It also makes a valid output variable (a letter or `_` first): a label starting with a digit gets `n_`,
 * and a reserved context key (`loop`, `input`, `output`) gets `_node`.
 */
export function idFromLabel(label: string, taken: ReadonlySet<string> = new Set()): string {
  let base = slugOf(label);
  if (/^[0-9]/.test(base)) base = `n_${base}`.slice(0, 56);
  if (RESERVED_VARIABLES.has(base)) base = `${base}_node`; // a Loop node must not be ctx.loop
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const id = `${base}_${n}`;
    if (!taken.has(id)) return id;
  }
}
