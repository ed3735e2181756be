import { DelayValidationError } from './errors/delay-errors.js';
import { checkTaskRef } from './task-ref.js';

describe('checkTaskRef', () => {
  it('accepts { id } with the digits of any bigserial, and { key }, including all-digit keys', () => {
    expect(checkTaskRef({ id: '9223372036854775807' })).toEqual({ id: '9223372036854775807' });
    expect(checkTaskRef({ key: '12345' })).toEqual({ key: '12345' });
  });

  it.each([
    [{ id: '0' }, 'ref.id'],
    [{ id: '9223372036854775808' }, 'ref.id'],
    [{ id: 12 }, 'ref.id'],
    [{ id: '01' }, 'ref.id'],
    [{ key: '' }, 'ref.key'],
    [{ key: 'x'.repeat(501) }, 'ref.key'],
    [{ id: '1', key: 'k' }, 'ref'],
    [{}, 'ref'],
    ['42', 'ref'],
    [null, 'ref'],
  ])('rejects %j naming %s', (ref, field) => {
    let error: unknown;
    try {
      checkTaskRef(ref as never);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DelayValidationError);
    expect((error as DelayValidationError).field).toBe(field);
  });
});
