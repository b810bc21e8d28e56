/** Text: HTML the server produced from Markdown (markdown-it, raw HTML off, unsafe links dropped). */
import type { TextData } from './types';

export function TextWidget({ data }: { data: TextData }) {
  // The HTML is safe by contract (docs/widgets.md): it never contains raw user HTML.
  return <div className="wtext" data-testid="widget-text" dangerouslySetInnerHTML={{ __html: data.html }} />;
}
