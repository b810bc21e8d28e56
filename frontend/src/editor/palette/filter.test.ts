import { describe, expect, it } from 'vitest';

import { filterPalette } from './filter';

describe('palette search', () => {
  it('lists every type for an empty query, in palette order', () => {
    expect(filterPalette('  ')).toEqual(['start', 'python', 'http', 'set', 'dataQuery', 'condition', 'switch', 'loop', 'workflow', 'delay', 'wait', 'end']);
  });

  it('puts title prefixes first and matches descriptions and aliases', () => {
    expect(filterPalette('de')[0]).toBe('delay');
    expect(filterPalette('sql')).toEqual(['dataQuery']);
    expect(filterPalette('IF')).toEqual(['condition']);
    expect(filterPalette('wait')).toEqual(['wait', 'delay']); // the title first, then the alias
    expect(filterPalette('webhook')).toEqual(['http', 'wait']); // calling one, or being called
    expect(filterPalette('run code')).toEqual(['python']);
    expect(filterPalette('subworkflow')).toEqual(['workflow']);
    expect(filterPalette('run w')[0]).toBe('workflow');
    expect(filterPalette('http')).toEqual(['http', 'dataQuery']);
    expect(filterPalette('rest api')).toEqual(['http']);
    expect(filterPalette('zzz')).toEqual([]);
  });
});
