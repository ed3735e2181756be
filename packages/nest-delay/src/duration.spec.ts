import { parseDuration, tryParseDuration } from './duration.js';

describe('durations', () => {
  it.each([
    [1500, 1500],
    ['1500', 1500],
    ['250ms', 250],
    ['30s', 30_000],
    ['30m', 1_800_000],
    ['48h', 172_800_000],
    ['2d', 172_800_000],
    ['1.5s', 1500],
    [' 10 m ', 600_000],
  ])('%p is %p ms', (input, ms) => {
    expect(tryParseDuration(input)).toBe(ms);
  });

  it.each([-1, NaN, Infinity, '', 'm', '-5m', '5 minutes', '1e3', '5w', null, undefined, {}])(
    '%p is not a duration',
    (input) => {
      expect(tryParseDuration(input as never)).toBeUndefined();
      expect(() => parseDuration(input as never, 'delay')).toThrow(
        /^delay must be a non-negative number/,
      );
    },
  );
});
