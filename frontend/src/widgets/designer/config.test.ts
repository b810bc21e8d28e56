import { describe, expect, it } from 'vitest';

import { cleanConfig, defaultConfig, iframeSnippet, parseDefault, parseFrameAncestors, previewConfig, withMode } from './config';

const output = { rows: [{ name: 'a', qty: 3 }], total: 7, note: 'hi' };

describe('designer config', () => {
  it('guesses defaults from the output', () => {
    expect(defaultConfig('table', output)).toEqual({ rowsPath: 'rows', columns: [{ path: '', format: 'text' }], pageSize: 25 });
    expect(defaultConfig('chart', output)).toEqual({ chartType: 'bar', rowsPath: 'rows', labelPath: 'name', series: [{ path: 'qty' }] });
    expect(defaultConfig('metric', output)).toEqual({ valuePath: 'total', label: 'Value', format: 'number' });
    expect(defaultConfig('text', output)).toEqual({ path: 'note' });
    expect(defaultConfig('json', null, 'sync')).toEqual({ path: '', expandDepth: 2, waitSeconds: 10, inputs: [] });
  });
  it('adds and drops the sync keys with the mode', () => {
    expect(withMode({ path: '', waitSeconds: 3, inputs: [] }, 'replay')).toEqual({ path: '' });
    expect(withMode({ path: '', waitSeconds: 3 }, 'sync')).toEqual({ path: '', waitSeconds: 3, inputs: [] });
  });
  it('drops blank optional fields', () => {
    expect(cleanConfig('table', 'replay', { rowsPath: '', columns: [{ path: 'a', label: '', format: 'number' }], sort: null })).toEqual({
      rowsPath: '',
      columns: [{ path: 'a', format: 'number' }],
    });
    expect(cleanConfig('metric', 'sync', { valuePath: 'x', label: 'X', unit: '', inputs: [{ param: 'p', field: 'f', type: 'string', default: undefined }] })).toEqual({
      valuePath: 'x',
      label: 'X',
      waitSeconds: 10,
      inputs: [{ param: 'p', field: 'f', type: 'string' }],
    });
    expect(previewConfig('text', { path: 'a', waitSeconds: 5, inputs: [] })).toEqual({ path: 'a' });
  });
  it('parses sync input defaults', () => {
    expect(parseDefault('number', '4.5')).toBe(4.5);
    expect(parseDefault('boolean', 'yes')).toBe(true);
    expect(parseDefault('json', '{"a":1}')).toEqual({ a: 1 });
    expect(parseDefault('string', '')).toBeUndefined();
    expect(() => parseDefault('number', 'x')).toThrow();
  });
  it('parses frame ancestors', () => {
    expect(parseFrameAncestors('  ')).toEqual({ value: null, invalid: [] });
    expect(parseFrameAncestors("https://a.example.com\nhttp://127.0.0.1:8080/, 'self' ftp://x https://b.example/path")).toEqual({
      value: ['https://a.example.com', 'http://127.0.0.1:8080', "'self'"],
      invalid: ['ftp://x', 'https://b.example/path'],
    });
  });
  it('builds the iframe snippet', () => {
    expect(iframeSnippet('http://127.0.0.1:8000', '/embed/fde_x', 'Open "orders"')).toBe(
      '<iframe src="http://127.0.0.1:8000/embed/fde_x" title="Open &quot;orders&quot;" width="600" height="400" style="border:0" loading="lazy" referrerpolicy="no-referrer"></iframe>',
    );
  });
});
