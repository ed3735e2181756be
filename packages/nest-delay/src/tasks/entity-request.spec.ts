import { DelayValidationError } from '../errors/delay-errors.js';
import { checkEntityMove, checkEntityScope } from './entity-request.js';

const now = Date.UTC(2026, 0, 1);

describe('entity requests', () => {
  it('takes an entity alone, or with distinct types', () => {
    expect(checkEntityScope('order:42', undefined)).toEqual({ entity: 'order:42', types: null });
    expect(checkEntityScope('order:42', ['a', 'b', 'a'])).toEqual({
      entity: 'order:42',
      types: ['a', 'b'],
    });
  });

  it.each([
    [undefined, undefined, 'entity'],
    ['', undefined, 'entity'],
    ['a\0b', undefined, 'entity'],
    ['e', [], 'types'],
    ['e', Array.from({ length: 101 }, (_, i) => `t${i}`), 'types'],
    ['e', ['ok', 7], 'types[1]'],
  ])('refuses entity %j with types %j, naming %s', (entity, types, field) => {
    const call = () => checkEntityScope(entity, types);
    expect(call).toThrow(DelayValidationError);
    expect(call).toThrow(expect.objectContaining({ field }));
  });

  it('moves by a duration or to a time', () => {
    expect(checkEntityMove({ by: '2h' }, now)).toEqual({ byMs: 7_200_000 });
    expect(checkEntityMove({ by: 0 }, now)).toEqual({ byMs: 0 });
    expect(checkEntityMove({ to: '2026-01-02T00:00:00Z' }, now)).toEqual({
      toMs: Date.UTC(2026, 0, 2),
    });
  });

  it.each([
    [{}, 'by'],
    [undefined, 'by'],
    [{ by: '1h', to: now }, 'by'],
    [{ by: -1 }, 'by'],
    [{ by: 'later' }, 'by'],
    [{ to: 'soon' }, 'to'],
    [{ to: '10000-01-01T00:00:00Z' }, 'to'],
  ])('refuses %j, naming %s', (move, field) => {
    const call = () => checkEntityMove(move, now);
    expect(call).toThrow(DelayValidationError);
    expect(call).toThrow(expect.objectContaining({ field }));
  });
});
