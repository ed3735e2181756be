import type { TaskId } from '../task.types.js';
import { PENDING, PENDING_BY_ID } from './pending.js';
import type { Sql } from './sql.js';
import type { DueRow, TaskRow } from './task-row.js';

/**
 * Claims the due, still pending tasks among `ids` inside the caller's
 * transaction: setting executed_at here, in the same transaction as the
 * handlers' effects, is the exactly-once guarantee. SKIP LOCKED lets another
 * instance holding the same task move on instead of waiting; the pending test
 * after the lock is what stops a second execution. No ORDER BY: SKIP LOCKED
 * never waits, so lock order cannot deadlock; the caller sorts.
 */
export function claimTasks(sql: Sql, ids: TaskId[], now: Date) {
  return sql.rows<TaskRow>(
    `WITH due AS (
       SELECT id FROM delayed_task
       WHERE id = ANY($1::bigint[]) AND ${PENDING_BY_ID} AND due_at <= $2
       FOR UPDATE SKIP LOCKED
     )
     UPDATE delayed_task t
     SET executed_at = $2, attempts = t.attempts + 1, updated_at = $2
     FROM due WHERE t.id = due.id
     RETURNING t.*`,
    [ids, now],
  );
}

/** After a failed attempt (its savepoint rolled back): pending again, due at `dueAt`. */
export async function retryLater(
  sql: Sql,
  id: TaskId,
  error: string,
  dueAt: Date,
  lockedBy: string | null,
  now: Date,
): Promise<void> {
  await sql.rows(
    `UPDATE delayed_task
     SET executed_at = NULL, last_error = $2, due_at = $3, locked_by = $4::text, updated_at = $5
     WHERE id = $1`,
    [id, error, dueAt, lockedBy, now],
  );
}

/**
 * The handler asked to run again at `dueAt`: pending again, and the claim's
 * attempt given back, so snoozing never dead-letters a task.
 */
export async function snoozeTask(
  sql: Sql,
  id: TaskId,
  dueAt: Date,
  lockedBy: string | null,
  now: Date,
): Promise<void> {
  await sql.rows(
    `UPDATE delayed_task
     SET executed_at = NULL, attempts = attempts - 1, due_at = $2, locked_by = $3::text, updated_at = $4
     WHERE id = $1`,
    [id, dueAt, lockedBy, now],
  );
}

/** Out of attempts, discarded, or nobody can run it: kept, marked and visible, never deleted. */
export async function deadLetter(sql: Sql, id: TaskId, error: string, now: Date): Promise<void> {
  await sql.rows(
    `UPDATE delayed_task
     SET executed_at = NULL, dead_at = $3, last_error = $2, updated_at = $3, locked_by = NULL
     WHERE id = $1`,
    [id, error, now],
  );
}

/** Of fired ids the claim did not take, those still pending: to wait again in the wheel. */
export function findPendingByIds(sql: Sql, ids: TaskId[]) {
  return sql.rows<DueRow & { locked_by: string | null }>(
    `SELECT id, due_at, locked_by FROM delayed_task WHERE id = ANY($1::bigint[]) AND ${PENDING_BY_ID}`,
    [ids],
  );
}

/**
 * The next page of overdue tasks that no instance holds, in due order after
 * the keyset `after` (null: from the first). A backlog is fed to the claim by
 * id like a burst, without first leasing every row into a wheel only to fire
 * it at once. Reads only: the claim decides who runs a task, so instances
 * reading the same page cannot run it twice.
 */
export function findOverdueUnheld(sql: Sql, now: Date, after: DueRow | null, limit: number) {
  return sql.rows<DueRow>(
    `SELECT id, due_at FROM delayed_task
     WHERE locked_by IS NULL AND ${PENDING} AND due_at <= $1
       AND (due_at, id) > ($2::timestamptz, $3::bigint)
     ORDER BY due_at, id
     LIMIT $4`,
    [now, after?.due_at ?? '-infinity', after?.id ?? '0', limit],
  );
}
