/**
 * Markdown as safe HTML for text people write in the editor (sticky notes), by markdown-it, the engine the server's
 * text widgets use too (markdown-it-py): raw HTML is off (`<script>` shows as text), links are only http(s), mailto
 * and relative ones (markdown-it already refuses javascript:, vbscript:, file: and most data: URLs; this narrows it
 * further), images are not loaded (a note must not call out to other hosts), and links open in a new tab.
 */
import MarkdownIt from 'markdown-it';

const SAFE_LINK = /^(https?:|mailto:|#|\/(?!\/))/i;

const md = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });
md.disable(['image']);
const defaultValidate = md.validateLink.bind(md);
md.validateLink = (url: string) => defaultValidate(url) && SAFE_LINK.test(url.trim());

const renderLink = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  if (token) {
    token.attrSet('target', '_blank');
    token.attrSet('rel', 'noopener noreferrer nofollow');
  }
  return renderLink(tokens, idx, options, env, self);
};

/** HTML for `text`, safe to put in the page. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}
