import type { Recurrence } from './recurrence.js';

/** What to do with occurrences missed while no instance ran (or while paused). */
export type CatchUp = 'skip' | 'one' | 'all';

export interface PlanPolicy {
  catchUp: CatchUp;
  /** With `all`: run at most this many missed occurrences, the latest ones. */
  catchUpCap: number;
}

/** How many occurrences overdue by more than that a policy runs, the latest ones; the verdict's SQL says the same. */
export function overdueKept(policy: PlanPolicy): number {
  return policy.catchUp === 'skip' ? 0 : policy.catchUp === 'one' ? 1 : policy.catchUpCap;
}

export interface OccurrencePlan {
  /** Occurrences to insert as tasks, in order, each with the one before it. */
  run: Array<{ atMs: number; previousMs: number | null }>;
  /** Past occurrences the policy dropped. */
  missed: number;
  /** The first occurrence not planned: the schedule's next. */
  nextMs: number | undefined;
}

/** Planned occurrences of one schedule per round at most: a 1-second schedule plans a few rounds ahead. */
export const MAX_PLANNED_PER_ROUND = 1000;
/** Past occurrences walked at most to apply a catch-up policy; beyond, the walk restarts near now (once), then jumps to now. */
const MAX_WALKED = 1_000_000;

/**
 * Pure: the occurrences of a schedule from `nextMs` up to the horizon. Of
 * those more than `graceMs` past, the latest `overdueKept` run and the rest
 * are missed. Each carries the one before it in the sequence (`previousMs`,
 * run or missed; null for the first ever).
 */
export function planOccurrences(
  recurrence: Recurrence,
  nextMs: number,
  lastMs: number | null,
  nowMs: number,
  horizonMs: number,
  graceMs: number,
  policy: PlanPolicy,
): OccurrencePlan {
  const past: OccurrencePlan['run'] = [];
  const keep = overdueKept(policy);
  let missed = 0;
  let at: number | undefined = nextMs;
  let previous = lastMs;
  let walked = 0;
  let restarted = false;
  while (at !== undefined && at < nowMs - graceMs) {
    if (++walked > MAX_WALKED) {
      // A long outage of a frequent schedule: what is left is missed, uncounted.
      // Those kept so far are from the outage's middle, not the latest, so
      // once: drop them and walk again from far enough back for `keep` more.
      const restartMs = Math.floor(nowMs - graceMs - ((at - nextMs) / MAX_WALKED) * 2 * (keep + 1));
      if (!restarted && restartMs > at) {
        restarted = true;
        walked = 0;
        missed += past.length;
        past.length = 0;
        previous = null;
        at = recurrence.next(restartMs);
        continue;
      }
      previous = null;
      at = recurrence.next(nowMs - graceMs - 1);
      break;
    }
    past.push({ atMs: at, previousMs: previous });
    if (past.length > keep) {
      past.shift();
      missed++;
    }
    previous = at;
    at = recurrence.next(at);
  }
  const run = past;
  while (at !== undefined && at < horizonMs && run.length < MAX_PLANNED_PER_ROUND) {
    run.push({ atMs: at, previousMs: previous });
    previous = at;
    at = recurrence.next(at);
  }
  return { run, missed, nextMs: at };
}
