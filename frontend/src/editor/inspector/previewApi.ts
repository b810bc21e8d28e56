/** `POST /api/templates/preview`: a template or expression resolved by the server's sandboxed Jinja2. */
import { request } from '../../api/client';

export type PreviewKind = 'template' | 'expression';

export async function previewTemplate(kind: PreviewKind, source: string, context: Record<string, unknown>, signal?: AbortSignal): Promise<unknown> {
  const body = kind === 'template' ? { template: source, context } : { expression: source, context };
  const answer = await request<{ value: unknown }>('POST', '/api/templates/preview', body, signal);
  return answer.value;
}
