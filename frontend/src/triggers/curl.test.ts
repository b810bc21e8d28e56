import { describe, expect, it } from 'vitest';

import { bodyForCurl, buildCurl, shellQuote, webhookUrl } from './curl';

describe('webhook curl snippet', () => {
  it('quotes for a POSIX shell', () => {
    expect(shellQuote('plain')).toBe(`'plain'`);
    expect(shellQuote(`it's`)).toBe(`'it'\\''s'`);
  });

  it('builds the absolute URL with a capped wait', () => {
    expect(webhookUrl('http://127.0.0.1:8000', '/hooks/wf1')).toBe('http://127.0.0.1:8000/hooks/wf1');
    expect(webhookUrl('https://flow.example.com', '/hooks/wf1', 10)).toBe('https://flow.example.com/hooks/wf1?wait=10');
    expect(webhookUrl('https://flow.example.com', '/hooks/wf1', 90)).toBe('https://flow.example.com/hooks/wf1?wait=30');
    expect(webhookUrl('https://flow.example.com', '/hooks/wf1', 0)).toBe('https://flow.example.com/hooks/wf1');
  });

  it('sends compact JSON, {} for blank or broken text', () => {
    expect(bodyForCurl('{\n  "n": 1\n}')).toBe('{"n":1}');
    expect(bodyForCurl('  ')).toBe('{}');
    expect(bodyForCurl('{oops')).toBe('{}');
    expect(bodyForCurl({ a: [1] })).toBe('{"a":[1]}');
  });

  it('uses the secret when it is shown, else a shell variable', () => {
    const withSecret = buildCurl({ origin: 'http://localhost:8000', path: '/hooks/wf1', secret: 's3cr3t', body: `{"name": "O'Brien"}`, waitSeconds: 10 });
    expect(withSecret).toBe(
      [
        `curl -X POST 'http://localhost:8000/hooks/wf1?wait=10' \\`,
        `  -H 'Content-Type: application/json' \\`,
        `  -H 'X-Flowdeck-Secret: s3cr3t' \\`,
        `  --data '{"name":"O'\\''Brien"}'`,
      ].join('\n'),
    );
    const placeholder = buildCurl({ origin: 'http://localhost:8000', path: '/hooks/wf1' });
    expect(placeholder).toContain(`-H "X-Flowdeck-Secret: $FLOWDECK_WEBHOOK_SECRET"`);
    expect(placeholder).toContain(`--data '{}'`);
    expect(placeholder).not.toContain('wait=');
  });
});
