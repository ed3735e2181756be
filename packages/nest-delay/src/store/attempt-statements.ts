import type { TaskId } from '../task.types.js';
import { pendingIn } from './pending.js';
import type { ClaimConnection, Sql } from './sql.js';

/**
 * Advisory lock keys of attempts: a class of their own (the two-int form,
 * so it cannot meet a user's single-bigint keys), the attempt id within it.
 */
export const ATTEMPT_LOCK_CLASS = 0x6e64_6174; // 'ndat'
export const attemptLockKey = (column: string) => `(${column} % 2147483647)::int`;

/**
 * Notes, in a commit of its own, that this claim is about to run `ids`, and
 * takes a session-level advisory lock on the note: the lock lives exactly as
 * long as this connection's session, so while it is held the claim is alive,
 * and once the session is gone (the process died, or the claim was cut off)
 * the note is a dead attempt that the next claim of each task charges (see
 * claimTasks). The claim deletes the note and drops the lock in its own
 * statement. Returns the note's id. (Claims send it with their BEGIN, in
 * recordAttemptAndBegin; this form is for a note on its own.)
 */
export async function recordAttempt(
  sql: Sql,
  instanceId: string,
  ids: TaskId[],
  now: Date,
): Promise<string> {
  const [row] = await sql.rows<{ id: string }>(noteStatement('$1', '$2::bigint[]', '$3'), [
    instanceId,
    ids,
    now,
  ]);
  return row.id;
}

/**
 * recordAttempt and the claim's BEGIN in one round trip: the note commits in
 * a transaction of its own (BEGIN … COMMIT: a statement before a BEGIN in the
 * same message would join its transaction instead), then the claim's
 * transaction begins. A script takes no parameters, so the values are
 * quoted into it: the instance id by pg's own quoting, ids checked as digits,
 * the time as an ISO literal.
 */
export async function recordAttemptAndBegin(
  connection: ClaimConnection,
  instanceId: string,
  ids: TaskId[],
  now: Date,
): Promise<string> {
  for (const id of ids) if (!/^[0-9]+$/.test(id)) throw new Error(`not a task id: ${id}`);
  const note = noteStatement(
    connection.literal(instanceId),
    `'{${ids.join(',')}}'::bigint[]`,
    `'${now.toISOString()}'::timestamptz`,
  );
  const results = await connection.beginAfter(`BEGIN; ${note}; COMMIT`);
  return (results[1][0] as { id: string }).id;
}

/** The note's one statement, given its three values as SQL. */
function noteStatement(instanceId: string, ids: string, now: string): string {
  // Committed without waiting for the WAL flush: the note matters only if the
  // app dies while Postgres lives on (and flushes it within milliseconds); if
  // Postgres itself crashes, the claims die with it and nothing is to charge.
  return `WITH async AS (
       SELECT set_config('synchronous_commit', 'off', true)
     ), noted AS (
       INSERT INTO delay_attempt (instance_id, task_ids, started_at, recorded_at)
       SELECT ${instanceId}, ${ids}, ${now}, now() FROM async
       RETURNING id
     )
     SELECT id, pg_advisory_lock(${ATTEMPT_LOCK_CLASS}, ${attemptLockKey('id')}) FROM noted`;
}

/**
 * Forgets the notes of claims that ended without their tasks being at fault
 * (failed as a whole, or stopped by a shutdown). Never waits: a note that a
 * transaction still holds is skipped; returns the ids it deleted.
 */
export async function forgetAttempts(sql: Sql, attemptIds: string[]): Promise<string[]> {
  const rows = await sql.rows<{ id: string }>(
    `DELETE FROM delay_attempt WHERE id IN (
       SELECT id FROM delay_attempt WHERE id = ANY($1::bigint[]) FOR UPDATE SKIP LOCKED
     ) RETURNING id`,
    [attemptIds],
  );
  return rows.map((row) => row.id);
}

/**
 * Deletes attempt rows that can no longer charge anything: none of their
 * tasks is still pending (each was claimed since, and charged then, or was
 * cancelled), or Postgres restarted since (its claims died with it, not of
 * their tasks). Old rows only. Reads tasks without locking them.
 */
export async function forgetSettledAttempts(sql: Sql, olderThan: Date): Promise<void> {
  await sql.rows(
    `DELETE FROM delay_attempt a
     WHERE a.started_at < $1
       AND (NOT EXISTS (SELECT 1 FROM delayed_task t WHERE t.id = ANY(a.task_ids) AND ${pendingIn('t')})
            OR a.recorded_at < pg_postmaster_start_time())`,
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
