/** Ids: random (crypto.randomUUID), readable, and always within SPEC §1's `[A-Za-z0-9_-]{1,64}`. */

export const NODE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const VARIABLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

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
