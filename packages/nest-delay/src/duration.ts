/**
 * Durations as people write them in configuration and code: `'30m'`, `'48h'`,
 * `'1.5s'`, `'250ms'`, `'2d'`, or a plain number of milliseconds.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;

export type Duration = number | string;

/** Returns the duration in whole milliseconds, or `undefined` when it is not one. */
export function tryParseDuration(value: Duration): number | undefined {
  if (typeof value === 'number') {
    return Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
  }
  if (typeof value !== 'string') return undefined;
  const match = DURATION.exec(value.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] ?? 'ms'];
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

export function parseDuration(value: Duration, name = 'duration'): number {
  const ms = tryParseDuration(value);
  if (ms === undefined) {
    throw new TypeError(
      `${name} must be a non-negative number of milliseconds or a string like '250ms', '30s', '30m', '48h' or '2d'; got ${JSON.stringify(value)}`,
    );
  }
  return ms;
}
