import { describe, expect, it } from 'vitest';

import { ApiError } from '../api/client';
import { errorAt, fieldErrors, unshownErrors } from './fieldErrors';

describe('fieldErrors', () => {
  it('puts each problem of a 400 on the field it names (path or key)', () => {
    const err = new ApiError(400, 'invalid data source', [
      { path: 'config.url', message: 'url must be a SQLAlchemy database URL' },
      { key: 'name', message: 'Expected `str`', source: 'body' },
      { path: 'config.headers.X-Key', message: 'must be a string' },
    ]);
    const errors = fieldErrors(err);
    expect(errorAt(errors, 'config.url')).toBe('url must be a SQLAlchemy database URL');
    expect(errorAt(errors, 'name')).toBe('Expected `str`');
    expect(errorAt(errors, 'config.headers')).toBe('must be a string');
    expect(errors.general).toBeNull();
    expect(unshownErrors(errors, ['config.url', 'name'])).toEqual(['config.headers.X-Key: must be a string']);
  });

  it('keeps an error that names no field as the general message', () => {
    const errors = fieldErrors(new ApiError(409, 'a data source named "orders" already exists', null));
    expect(errors.general).toBe('a data source named "orders" already exists');
    expect(errorAt(errors, 'name')).toBeUndefined();
    expect(fieldErrors(new Error('offline')).general).toBe('offline');
  });

  it('takes hostile paths as plain keys', () => {
    const errors = fieldErrors(new ApiError(400, 'bad', [{ path: '__proto__', message: 'no' }, { path: 'constructor', message: 'nope' }]));
    expect(errorAt(errors, '__proto__')).toBe('no');
    expect(errorAt(errors, 'constructor')).toBe('nope');
    expect(errorAt(errors, 'toString')).toBeUndefined();
  });
});
