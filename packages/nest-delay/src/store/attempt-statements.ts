import type { TaskId } from '../task.types.js';
import { pendingIn } from './pending.js';
import type { Sql } from './sql.js';

/**
 * Notes, in a commit of its own, that this instance is about to run `ids`:
 * if its claim never commits (the process died, or the claim was cut off),
 * the row stays and the next claim of each task charges it the attempt (see
 * claimTasks). Returns the row's id, which the claim deletes in its own
 * transaction.
 */
export async function recordAttempt(
  sql: Sql,
  instanceId: string,
  ids: TaskId[],
  now: Date,
): Promise<string> {
  // Committed without waiting for the WAL flush: the row matters only if the
  // app dies while Postgres lives on (and flushes it within milliseconds); if
  // Postgres itself crashes, the claims die with it and nothing is to charge.
  const [row] = await sql.rows<{ id: string }>(
    `WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
     INSERT INTO delay_attempt (instance_id, task_ids, started_at)
     SELECT $1, $2::bigint[], $3 FROM async
     RETURNING id`,
    [instanceId, ids, now],
  );
  return row.id;
}

/** Forgets attempts whose claims failed as a whole: rolled back by an error, not cut off by a death. */
export async function forgetAttempts(sql: Sql, attemptIds: string[]): Promise<void> {
  await sql.rows(`DELETE FROM delay_attempt WHERE id = ANY($1::bigint[])`, [attemptIds]);
}

/**
 * Deletes attempt rows that can no longer charge anything: none of their
 * tasks is still pending (each was claimed since, and charged then, or was
 * cancelled). Old rows only, so a claim between its row's commit and its own
 * transaction is never touched. Reads tasks without locking them.
 */
export async function forgetSettledAttempts(sql: Sql, olderThan: Date): Promise<void> {
  await sql.rows(
    `DELETE FROM delay_attempt a
     WHERE a.started_at < $1
       AND NOT EXISTS (SELECT 1 FROM delayed_task t WHERE t.id = ANY(a.task_ids) AND ${pendingIn('t')})`,
    [olderThan],
  );
}

/**
 * A handler that outlived its timeout and ignored its abort signal: its claim
 * was cut off (rolled back), so the attempt is charged here, with the
 * attempt's row gone in the same statement. Retried at `retryAt`, or
 * dead-lettered when that was its last attempt; flagged to run alone.
 */
export async function chargeTimedOut(
  sql: Sql,
  attemptId: string,
  id: TaskId,
  error: string,
  retryAt: Date,
  lockedBy: string | null,
  now: Date,
): Promise<{ dead: boolean } | undefined> {
  const [row] = await sql.rows<{ dead: boolean }>(
    `WITH gone AS (DELETE FROM delay_attempt WHERE id = $1)
     UPDATE delayed_task t
     SET attempts = t.attempts + 1, interrupted_at = $6, last_error = $3, updated_at = $6,
         dead_at = CASE WHEN t.attempts + 1 >= t.max_attempts THEN $6::timestamptz END,
         due_at = CASE WHEN t.attempts + 1 >= t.max_attempts THEN t.due_at ELSE $4 END,
         locked_by = CASE WHEN t.attempts + 1 >= t.max_attempts THEN NULL ELSE $5::text END
     WHERE t.id = $2 AND ${pendingIn('t')}
     RETURNING t.dead_at IS NOT NULL AS dead`,
    [attemptId, id, error, retryAt, lockedBy, now],
  );
  return row;
}
