import { BadRequestException, ServiceUnavailableException } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { mapUnknownError } from './all-exceptions.filter.js';

const pgError = (code: string) =>
  new QueryFailedError('SELECT 1', [], Object.assign(new Error(`pg ${code}`), { code }));

describe('mapUnknownError', () => {
  it.each([
    ['a deadlock', '40P01'],
    ['a serialization failure', '40001'],
    ['a lock timeout', '55P03'],
    ['a lost connection', '08006'],
    ['a server shutting down', '57P01'],
  ])('answers %s with a 503 to retry', (_name, code) => {
    expect(mapUnknownError(pgError(code))).toBeInstanceOf(ServiceUnavailableException);
  });

  it('answers a value the database refused with a 400', () => {
    expect(mapUnknownError(pgError('23514'))).toBeInstanceOf(BadRequestException);
    expect(mapUnknownError(pgError('22P02'))).toBeInstanceOf(BadRequestException);
  });

  it('answers a refused connection with a 503', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
      code: 'ECONNREFUSED',
    });
    expect(mapUnknownError(refused)).toBeInstanceOf(ServiceUnavailableException);
  });

  it('leaves a bug a bug: an unknown error or SQL error stays unmapped (a logged 500)', () => {
    expect(mapUnknownError(new TypeError('x is undefined'))).toBeUndefined();
    expect(mapUnknownError(pgError('42P01'))).toBeUndefined();
    expect(mapUnknownError('a string')).toBeUndefined();
  });
});
