import type { TaskId } from '../task.types.js';
import { PENDING_BY_ID, pendingIn, type TaskRow } from '../tasks/task-row.js';
import type { Sql } from '../store/sql.js';
import { FORGET_STOPPED_INTERVAL_MS, FORGET_STOPPED_TRIES } from '../context/tuning.js';
import { ATTEMPT_LOCK_CLASS, attemptLockKey } from './claim-statements.js';

/*
 * Attempt notes whose claim did not commit: forgotten (deleted uncharged)
 * when no task was at fault, taken and charged when orphaned, swept when
 * they can charge nothing more. A claim writes its own note and deletes it
 * with its claim (claim-statements.ts); nothing here runs on a claim that
 * commits.
 */

/**
 * A note stays locked by its claim's transaction until the server has ended
 * the closed session, so this skips locked notes and tries again for a while.
 */
export async function forgetOnceUnlocked(pool: Sql, notes: string[]): Promise<string[]> {
  for (let tries = 0; notes.length > 0 && tries < FORGET_STOPPED_TRIES; tries++) {
    if (tries > 0) await new Promise((resolve) => setTimeout(resolve, FORGET_STOPPED_INTERVAL_MS));
    const forgotten = await forgetAttempts(pool, notes).catch(() => [] as string[]);
    notes = notes.filter((id) => !forgotten.includes(id));
  }
  return notes;
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

/** A task with the cut-off attempts that orphaned notes hold against it. */
export interface OrphanedNoteCount {
  /** The task as it is now (locked by this transaction), not counting them. */
  row: TaskRow;
  /** Orphaned notes listing it: attempts that never committed. */
  times: number;
  /** The instance of one of them, for the task's last error. */
  instanceId: string;
}

/**
 * Finds the orphaned notes listing `ids` (tasks this transaction can lock), and
 * takes the ids out of them, so that each orphaned note charges each of its
 * tasks once. A note is orphaned when no session holds its lock (a live claim's
 * does, until it commits); one recorded before Postgres last started died
 * with Postgres, not of its tasks, and is left to the sweep. The transaction
 * lock taken on each also keeps two claims from charging one note at once.
 * Run in the claim transaction of a task that runs alone, before its claim:
 * if that claim never commits either, the notes are back, with one more.
 */
export async function takeOrphanedNotes(
  sql: Sql,
  ids: TaskId[],
  ownNoteId: string,
): Promise<OrphanedNoteCount[]> {
  const rows = await sql.rows<TaskRow & { times: number; instance: string }>(
    `WITH task AS (
       SELECT id FROM delayed_task WHERE id = ANY($1::bigint[]) AND ${PENDING_BY_ID}
       FOR UPDATE SKIP LOCKED
     ), listing AS MATERIALIZED (
       SELECT a.id FROM delay_attempt a
       WHERE a.id <> $2 AND a.task_ids && ARRAY(SELECT id FROM task)
         AND a.recorded_at >= pg_postmaster_start_time()
     ), orphaned AS (
       SELECT a.id, a.task_ids, a.instance_id FROM delay_attempt a JOIN listing USING (id)
       WHERE pg_try_advisory_xact_lock(${ATTEMPT_LOCK_CLASS}, ${attemptLockKey('a.id')})
       ORDER BY a.id
       FOR UPDATE OF a SKIP LOCKED
     ), trimmed AS (
       UPDATE delay_attempt a
       SET task_ids = ARRAY(SELECT x FROM unnest(a.task_ids) AS x WHERE x NOT IN (SELECT id FROM task))
       FROM orphaned WHERE a.id = orphaned.id
     ), counted AS (
       SELECT task_id, count(DISTINCT orphaned.id)::int AS times, max(orphaned.instance_id) AS instance
       FROM orphaned, unnest(orphaned.task_ids) AS task_id
       WHERE task_id IN (SELECT id FROM task)
       GROUP BY task_id
     )
     SELECT t.*, counted.times, counted.instance
     FROM counted JOIN delayed_task t ON t.id = counted.task_id`,
    [ids, ownNoteId],
  );
  return rows.map(({ times, instance, ...row }) => ({ row, times, instanceId: instance }));
}
