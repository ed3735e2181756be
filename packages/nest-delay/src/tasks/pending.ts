/** A task is pending (will still run) while none of these is set. */
export const PENDING = `executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`;

/** The same test for a table aliased in the statement. */
export function pendingIn(alias: string): string {
  return `${alias}.executed_at IS NULL AND ${alias}.cancelled_at IS NULL AND ${alias}.dead_at IS NULL`;
}

/**
 * The same test, for statements that look tasks up by id: written so that it
 * does not match the partial indexes' predicate, which leaves the primary key
 * as the only index the planner can use. With the plain form, right after a
 * bulk insert (statistics not yet updated), Postgres believes few pending
 * tasks are due and scans the due-order index filtering on id instead.
 */
export const PENDING_BY_ID = `num_nulls(executed_at, cancelled_at, dead_at) = 3`;
