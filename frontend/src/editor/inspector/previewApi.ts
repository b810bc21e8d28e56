/** `POST /api/templates/preview`: a template or expression resolved by the server's sandboxed Jinja2. */
import { request } from '../../api/client';

export type PreviewKind = 'template' | 'expression';

/** `switchValue`: a switch's value template, bound as `value` in the expression (a case's). */
export async function previewTemplate(
  kind: PreviewKind,
  source: string,
  context: Record<string, unknown>,
  signal?: AbortSignal,
  switchValue?: string,
): Promise<unknown> {
  const body = kind === 'template' ? { template: source, context } : { expression: source, context, ...(switchValue === undefined ? {} : { switchValue }) };
  const answer = await request<{ value: unknown }>('POST', '/api/templates/preview', body, signal);
  return answer.value;
}
