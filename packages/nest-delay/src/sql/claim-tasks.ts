import { PENDING, PENDING_BY_ID } from './pending.js';

/**
 * Claims due tasks for execution inside the caller's transaction: setting
 * executed_at here, in the same transaction as the handlers' effects, is the
 * exactly-once guarantee. SKIP LOCKED lets another instance holding the same
 * task move on instead of waiting; the PENDING test after the lock is what
 * stops a second execution. No ORDER BY: SKIP LOCKED never waits, so lock
 * order cannot deadlock, and the caller sorts. $1 ids, $2 now.
 */
export const CLAIM_TASKS = `
  WITH due AS (
    SELECT id FROM delayed_task
    WHERE id = ANY($1::bigint[]) AND ${PENDING_BY_ID} AND due_at <= $2
    FOR UPDATE SKIP LOCKED
  )
  UPDATE delayed_task t
  SET executed_at = $2, attempts = t.attempts + 1, updated_at = $2
  FROM due WHERE t.id = due.id
  RETURNING t.*`;

/**
 * The next page of overdue tasks that no instance holds, in due order after
 * the keyset ($2 due_at, $3 id): a backlog (tasks that fell due while no
 * instance ran, or whose instance died) is fed to the claim by id like a
 * burst, without first writing a lease to every row and loading it into the
 * wheel only to fire it at once. Reads only: the claim decides who runs a
 * task, so instances reading the same page cannot run it twice.
 * $1 now, $2 after due_at, $3 after id, $4 page size.
 */
export const FIND_OVERDUE_UNHELD = `
  SELECT id, due_at FROM delayed_task
  WHERE locked_by IS NULL AND ${PENDING} AND due_at <= $1
    AND (due_at, id) > ($2::timestamptz, $3::bigint)
  ORDER BY due_at, id
  LIMIT $4`;

/** Of the fired ids that were not claimed, those still pending, to put back in the wheel. $1 ids. */
export const FIND_PENDING_BY_IDS = `
  SELECT id, due_at FROM delayed_task WHERE id = ANY($1::bigint[]) AND ${PENDING_BY_ID}`;

/** After a handler failed (its savepoint rolled back): back to pending, later. $1 id, $2 error, $3 retry at, $4 now, $5 locked_by. */
export const RETRY_TASK_LATER = `
  UPDATE delayed_task
  SET executed_at = NULL, last_error = $2, due_at = $3, updated_at = $4,
      locked_by = $5::text, locked_at = CASE WHEN $5::text IS NULL THEN NULL ELSE $4::timestamptz END
  WHERE id = $1`;

/** Out of attempts, or nobody can run it: kept, marked and visible; never deleted. $1 id, $2 error, $3 now. */
export const DEAD_LETTER_TASK = `
  UPDATE delayed_task
  SET executed_at = NULL, dead_at = $3, last_error = $2, updated_at = $3, locked_by = NULL, locked_at = NULL
  WHERE id = $1`;
