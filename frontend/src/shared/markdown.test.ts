import { describe, expect, it } from 'vitest';

import { renderMarkdown } from './markdown';

describe('renderMarkdown', () => {
  it('renders the Markdown people write in notes', () => {
    const html = renderMarkdown('# Plan\n**Ask ops** first\n\n- one\n- two\n\n`ctx.input`');
    expect(html).toContain('<h1>Plan</h1>');
    expect(html).toContain('<strong>Ask ops</strong>');
    expect(html).toContain('<li>one</li>');
    expect(html).toContain('<code>ctx.input</code>');
  });

  it('shows raw HTML as text, never as markup', () => {
    const html = renderMarkdown('<script>alert(1)</script> <img src=x onerror=alert(1)> <b>b</b>');
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;script&gt;');
    expect(html).toContain('&lt;b&gt;b&lt;/b&gt;');
  });

  it('keeps http(s), mailto and relative links, opening in a new tab, and drops script and data URLs', () => {
    const html = renderMarkdown('[ok](https://example.com/a) [mail](mailto:a@b.c) [rel](/runs) [x](javascript:alert(1)) [d](data:text/html,hi) [v](vbscript:x)');
    expect(html).toContain('<a href="https://example.com/a" target="_blank" rel="noopener noreferrer nofollow">ok</a>');
    expect(html).toContain('href="mailto:a@b.c"');
    expect(html).toContain('href="/runs"');
    expect(html).not.toMatch(/href="(javascript|data|vbscript):/i);
    expect(html).toContain('[x](javascript:alert(1))'); // left as the text it was
  });

  it('does not load images (a note never calls out to another host)', () => {
    const html = renderMarkdown('![tracker](https://evil.example/pixel.png)');
    expect(html).not.toContain('<img');
  });

  it('links bare URLs', () => {
    expect(renderMarkdown('see https://example.com')).toContain('<a href="https://example.com"');
  });
});
