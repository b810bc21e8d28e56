/** The ready-to-copy curl command that calls a workflow's webhook (SPEC §8). */

export const SECRET_HEADER = 'X-Flowdeck-Secret';
export const SECRET_PLACEHOLDER = '$FLOWDECK_WEBHOOK_SECRET';
export const MAX_WAIT_SECONDS = 30;

/** `text` as one POSIX shell word in single quotes (a ' inside becomes '\''). */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The webhook's absolute URL: the server answers a path (`/hooks/<id>`), the browser knows the origin. */
export function webhookUrl(origin: string, path: string, waitSeconds?: number | null): string {
  const url = new URL(path, origin);
  if (waitSeconds !== undefined && waitSeconds !== null && waitSeconds > 0) {
    url.searchParams.set('wait', String(Math.min(MAX_WAIT_SECONDS, Math.floor(waitSeconds))));
  }
  return url.toString();
}

/** Compact JSON for the body; text that is not JSON is sent as `{}` (the example must work as pasted). */
export function bodyForCurl(input: string | unknown): string {
  if (typeof input !== 'string') return JSON.stringify(input ?? {});
  const text = input.trim();
  if (text === '') return '{}';
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return '{}';
  }
}

export type CurlOptions = {
  origin: string;
  path: string;
  /** The secret when it is on screen (just generated); otherwise a shell variable stands in for it. */
  secret?: string | null;
  /** The run input: JSON text (the editor's test input) or a value. */
  body?: string | unknown;
  waitSeconds?: number | null;
};

/** A multi-line curl command (backslash continuations), safe to paste into a POSIX shell. */
export function buildCurl({ origin, path, secret, body = '{}', waitSeconds = null }: CurlOptions): string {
  const header = secret ? shellQuote(`${SECRET_HEADER}: ${secret}`) : `"${SECRET_HEADER}: ${SECRET_PLACEHOLDER}"`;
  return [
    `curl -X POST ${shellQuote(webhookUrl(origin, path, waitSeconds))}`,
    `  -H ${shellQuote('Content-Type: application/json')}`,
    `  -H ${header}`,
    `  --data ${shellQuote(bodyForCurl(body))}`,
  ].join(' \\\n');
}
