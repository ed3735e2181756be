import { PLAN_RETRY_FIRST_MS, PLAN_RETRY_MAX_MS } from '../context/tuning.js';

/**
 * How long a schedule whose plan failed `failures` times before (0 for its
 * first failure) is set aside: a minute, doubling, at most an hour. A rule
 * that cannot be planned (a row changed by hand, a zone the platform lost)
 * is retried without costing every planning round.
 */
export function planRetryDelayMs(failures: number): number {
  return Math.min(PLAN_RETRY_MAX_MS, PLAN_RETRY_FIRST_MS * 2 ** Math.min(failures, 20));
}
