import type { PlanPolicy } from './occurrence-plan.js';

/**
 * An occurrence is **overdue** when it is still to start more than two
 * leases after it was due. A crashed instance's tasks are taken over within
 * a lease and a heartbeat (a third of a lease), so an occurrence that late
 * was not delayed by one instance dying while others ran: no instance ran.
 * That is when a catch-up policy applies, to planned and unplanned
 * occurrences alike (docs/recurring-tasks.md, "Catch-up").
 */
export const OVERDUE_AFTER_LEASES = 2;

/** How late (ms) an occurrence may start before it counts as overdue. */
export function overdueAfterMs(leaseMs: number): number {
  return OVERDUE_AFTER_LEASES * leaseMs;
}

/** Whether an occurrence due at `dueAtMs` is overdue at `nowMs`. */
export function isOverdue(dueAtMs: number, nowMs: number, leaseMs: number): boolean {
  return dueAtMs < nowMs - overdueAfterMs(leaseMs);
}

/**
 * How many overdue occurrences of a schedule a policy runs, the latest ones:
 * none (`skip`), the latest (`one`), or up to `catchUpCap` (`all`). The SQL
 * of the claim's verdict (occurrence-verdict.ts) says the same.
 */
export function overdueKept(policy: PlanPolicy): number {
  return policy.catchUp === 'skip' ? 0 : policy.catchUp === 'one' ? 1 : policy.catchUpCap;
}
