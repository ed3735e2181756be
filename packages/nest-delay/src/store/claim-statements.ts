import type { TaskId } from '../task.types.js';
import { ATTEMPT_LOCK_CLASS, attemptLockKey } from './attempt-statements.js';
import { PENDING, PENDING_BY_ID } from './pending.js';
import type { Sql } from './sql.js';
import type { DueRow, TaskRow } from './task-row.js';

/** A claimed row, or (claimed = false) one whose last attempt was cut off, left for a claim of its own. */
export interface ClaimRow extends TaskRow {
  interrupted_at: Date | null;
  claimed: boolean;
}

/**
 * Claims the due, still pending tasks among `ids` inside the caller's
 * transaction: setting executed_at here, in the same transaction as the
 * handlers' effects, is the exactly-once guarantee. SKIP LOCKED lets another
 * instance holding the same task move on instead of waiting; the pending test
 * after the lock is what stops a second execution. No ORDER BY: SKIP LOCKED
 * never waits (on tasks, nor on attempt rows), so lock order cannot
 * deadlock; the caller sorts.
 *
 * Attempts that never committed are charged here too. Each claim first
 * commits a `delay_attempt` row listing its ids, under a session advisory
 * lock, and deletes it (and drops the lock) here. A row listing a task this
 * claim could lock, whose lock no session holds, is an earlier attempt that
 * was cut off (its process died, or a timeout cut it); one from before
 * Postgres last started died with Postgres, not of its tasks, and is left to
 * the sweep. Each dead row adds one attempt and flags the task
 * `interrupted_at`, and the task's id leaves the row. A flagged task, or one
 * that any other note lists, is claimed only `alone`: in a batch it is
 * charged and returned unclaimed, for a claim of its own, so a task that
 * kills its process takes no batch-mates with it next time.
 *
 * Last, the session gets Postgres-side limits for the rest of the
 * transaction, so that even a frozen process cannot hold these locks forever.
 */
export async function claimTasks(
  sql: Sql,
  ids: TaskId[],
  now: Date,
  attemptId: string,
  alone: boolean,
  backstopMs: number,
): Promise<ClaimRow[]> {
  const rows = await sql.rows<Wire<ClaimRow>>(
    `WITH mine AS (
       DELETE FROM delay_attempt WHERE id = $3
       RETURNING pg_advisory_unlock(${ATTEMPT_LOCK_CLASS}, ${attemptLockKey('id')})
     ), due AS (
       SELECT id, interrupted_at FROM delayed_task
       WHERE id = ANY($1::bigint[]) AND ${PENDING_BY_ID} AND due_at <= $2
       FOR UPDATE SKIP LOCKED
     ), listing AS MATERIALIZED (
       SELECT a.id, a.task_ids FROM delay_attempt a
       WHERE a.id <> $3 AND a.task_ids && ARRAY(SELECT id FROM due)
         AND a.recorded_at >= pg_postmaster_start_time()
     ), earlier AS (
       -- Dead only: no session holds its lock (a live claim's does). The
       -- transaction lock taken here also keeps two claims from charging it at once.
       SELECT a.id, a.task_ids, a.instance_id FROM delay_attempt a JOIN listing USING (id)
       WHERE pg_try_advisory_xact_lock(${ATTEMPT_LOCK_CLASS}, ${attemptLockKey('a.id')})
       ORDER BY a.id
       FOR UPDATE OF a SKIP LOCKED
     ), trimmed AS (
       UPDATE delay_attempt a
       SET task_ids = ARRAY(SELECT x FROM unnest(a.task_ids) AS x WHERE x NOT IN (SELECT id FROM due))
       FROM earlier WHERE a.id = earlier.id
     ), cut AS (
       SELECT task_id, count(DISTINCT earlier.id)::int AS times, max(earlier.instance_id) AS instance
       FROM earlier, unnest(earlier.task_ids) AS task_id
       WHERE task_id IN (SELECT id FROM due)
       GROUP BY task_id
     ), listed AS (
       -- In any other note, dead or not: a note another claim is charging
       -- right now looks alive to this one, so such a task is never run in a batch.
       SELECT DISTINCT task_id FROM listing, unnest(listing.task_ids) AS task_id
       WHERE task_id IN (SELECT id FROM due)
     ), marked AS (
       SELECT due.id,
              coalesce(cut.times, 0) AS times, cut.instance,
              (due.interrupted_at IS NOT NULL OR cut.times IS NOT NULL
               OR due.id IN (SELECT task_id FROM listed)) AS suspect
       FROM due LEFT JOIN cut ON cut.task_id = due.id
     ), updated AS (
       UPDATE delayed_task t
       SET executed_at = CASE WHEN m.suspect AND NOT $4 THEN NULL ELSE $2 END,
           attempts = t.attempts + m.times + CASE WHEN m.suspect AND NOT $4 THEN 0 ELSE 1 END,
           interrupted_at = CASE WHEN m.times > 0 THEN $2 ELSE t.interrupted_at END,
           last_error = CASE WHEN m.times > 0
             THEN 'attempt ' || (t.attempts + m.times) || ' was cut off: instance ' || m.instance ||
                  ' stopped or died while running it'
             ELSE t.last_error END,
           updated_at = $2
       FROM marked m WHERE t.id = m.id
       RETURNING t.id, t.type, t.key, t.payload, t.attempts, t.max_attempts, t.last_error,
                 t.locked_by, ${epochMs('t.due_at')} AS due_at, ${epochMs('t.executed_at')} AS executed_at,
                 ${epochMs('t.cancelled_at')} AS cancelled_at, ${epochMs('t.dead_at')} AS dead_at,
                 ${epochMs('t.created_at')} AS created_at, ${epochMs('t.updated_at')} AS updated_at,
                 ${epochMs('t.interrupted_at')} AS interrupted_at,
                 NOT (m.suspect AND NOT $4) AS claimed
     ), limits AS (
       SELECT set_config('statement_timeout', $5, true),
              set_config('idle_in_transaction_session_timeout', $5, true)
     )
     SELECT updated.* FROM updated, limits`,
    [ids, now, attemptId, alone, String(backstopMs)],
  );
  return rows.map(fromWire);
}

/**
 * Timestamps leave Postgres as epoch milliseconds: parsing `pg`'s text form
 * (three regular expressions per value) was ~6% of a burst's CPU, at five
 * timestamps per claimed row.
 */
const epochMs = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8`;

type Wire<T> = {
  [K in keyof T]: T[K] extends Date ? number : T[K] extends Date | null ? number | null : T[K];
};

const toDate = (ms: number) => new Date(Math.floor(ms));
const toDateOrNull = (ms: number | null) => (ms === null ? null : toDate(ms));

function fromWire(row: Wire<ClaimRow>): ClaimRow {
  return {
    id: row.id,
    type: row.type,
    key: row.key,
    payload: row.payload,
    due_at: toDate(row.due_at),
    executed_at: toDateOrNull(row.executed_at),
    cancelled_at: toDateOrNull(row.cancelled_at),
    dead_at: toDateOrNull(row.dead_at),
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    last_error: row.last_error,
    locked_by: row.locked_by,
    created_at: toDate(row.created_at),
    updated_at: toDate(row.updated_at),
    interrupted_at: toDateOrNull(row.interrupted_at),
    claimed: row.claimed,
  };
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
     SET executed_at = NULL, last_error = $2, due_at = $3, locked_by = $4::text, updated_at = $5,
         interrupted_at = NULL
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
     SET executed_at = NULL, attempts = attempts - 1, due_at = $2, locked_by = $3::text, updated_at = $4,
         interrupted_at = NULL
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

/**
 * A task whose cut-off attempts used up its maxAttempts: dead-lettered by
 * its claim without running again (the claim's own attempt is given back).
 */
export async function deadLetterUnrun(sql: Sql, id: TaskId, now: Date): Promise<void> {
  await sql.rows(
    `UPDATE delayed_task
     SET executed_at = NULL, attempts = attempts - 1, dead_at = $2, updated_at = $2, locked_by = NULL,
         last_error = coalesce(last_error, 'its attempts were cut off') ||
                      '; out of attempts, dead-lettered without running it again'
     WHERE id = $1`,
    [id, now],
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
