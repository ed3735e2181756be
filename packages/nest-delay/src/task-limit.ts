import { parseDuration, type Duration } from './duration.js';

/**
 * A shared limit on one task type, held across every instance (see
 * docs/limits.md): `concurrency` handlers of the type running at once,
 * `rate.starts` starts in any window of `rate.per`. With `key`, each key the
 * function returns for a task's payload (a merchant, a user) has a budget of
 * its own; without it the whole type shares one.
 */
export interface TaskLimit {
  /** At most this many of the type's (or key's) handlers run at once, across all instances. */
  concurrency?: number;
  /** At most `starts` handlers start in any window of length `per`, across all instances. */
  rate?: { starts: number; per: Duration };
  /** Each key gets the limits of its own: `(payload) => payload.merchantId`. Called at each claim. */
  key?: (payload: any) => string;
}

/** A limit as the claim uses it: null is "no such limit". */
export interface ResolvedLimit {
  concurrency: number | null;
  rate: { starts: number; perMs: number } | null;
}

/** What can be set at run time (DelayLimits.set): a number, or null for none. */
export interface LimitChange {
  concurrency?: number | null;
  rate?: { starts: number; per: Duration } | null;
}

export const NO_LIMIT: ResolvedLimit = { concurrency: null, rate: null };

const MAX_CONCURRENCY = 100_000;
const MAX_STARTS = 10_000;
const MAX_PER_MS = 24 * 3_600_000;

export function isLimited(limit: ResolvedLimit): boolean {
  return limit.concurrency !== null || limit.rate !== null;
}

/** Checks a declared or run-time limit; `where` names it in the error. */
export function resolveLimit(
  limit: LimitChange,
  base: ResolvedLimit,
  where: string,
): ResolvedLimit {
  const concurrency =
    limit.concurrency === undefined ? base.concurrency : checkConcurrency(limit.concurrency, where);
  const rate = limit.rate === undefined ? base.rate : checkRate(limit.rate, where);
  return { concurrency, rate };
}

function checkConcurrency(value: number | null, where: string): number | null {
  if (value === null) return null;
  if (!Number.isSafeInteger(value) || value < 1 || value > MAX_CONCURRENCY) {
    throw new TypeError(
      `${where}.concurrency must be an integer from 1 to ${MAX_CONCURRENCY} (pause the type for 0); got ${String(value)}`,
    );
  }
  return value;
}

function checkRate(
  rate: { starts: number; per: Duration } | null,
  where: string,
): ResolvedLimit['rate'] {
  if (rate === null) return null;
  if (typeof rate !== 'object') {
    throw new TypeError(`${where}.rate must be { starts, per }; got ${JSON.stringify(rate)}`);
  }
  const { starts } = rate;
  if (!Number.isSafeInteger(starts) || starts < 1 || starts > MAX_STARTS) {
    throw new TypeError(
      `${where}.rate.starts must be an integer from 1 to ${MAX_STARTS}; got ${String(starts)}`,
    );
  }
  const perMs = parseDuration(rate.per, `${where}.rate.per`);
  if (!Number.isSafeInteger(perMs) || perMs < 1 || perMs > MAX_PER_MS) {
    throw new TypeError(`${where}.rate.per must be from 1 ms to 24 hours; got ${perMs} ms`);
  }
  return { starts, perMs };
}

/** A key function's result for a payload, as the ledger stores it. */
export function limitKeyOf(
  keyFn: ((payload: any) => string) | undefined,
  payload: unknown,
): string | Error {
  if (!keyFn) return '';
  try {
    const key = keyFn(payload);
    if (typeof key !== 'string' && typeof key !== 'number') {
      return new Error(`its limit key function returned ${typeof key}, not a string`);
    }
    const text = String(key);
    if (text.length > 200) return new Error(`its limit key is longer than 200 characters`);
    return text;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}
