/** A task is pending (will still run) while none of these is set. */
export const PENDING = `executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`;

export function pendingIn(alias: string): string {
  return `${alias}.executed_at IS NULL AND ${alias}.cancelled_at IS NULL AND ${alias}.dead_at IS NULL`;
}

/**
 * The same test for look-ups by id, written not to match the partial indexes'
 * predicate so the planner can only use the primary key: with the plain form
 * and stale statistics (after a bulk insert) it scans the due-order index.
 */
export const PENDING_BY_ID = `num_nulls(executed_at, cancelled_at, dead_at) = 3`;
