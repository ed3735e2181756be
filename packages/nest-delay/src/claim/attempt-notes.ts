import type { TaskId } from '../task.types.js';
import { PENDING_BY_ID, pendingIn } from '../tasks/task-sql.js';
import { assertIds, type ClaimConnection, type Sql } from '../store/sql.js';
import type { TaskRow } from '../tasks/task-row.js';
import {
  FORGET_STOPPED_INTERVAL_MS,
  FORGET_STOPPED_TRIES,
  NOTE_ID_BLOCK,
} from '../context/tuning.js';

/*
 * What the claims of one instance keep in memory about their attempt notes
 * (the notes in flight and those to forget, NoteKeeper; the notes' ids,
 * NoteIds), and the notes' statements.
 */

/**
 * The dispatcher's book of attempt notes: which claim connection runs which
 * note, and the notes to forget. A note is forgotten (deleted uncharged)
 * when its claim ended with no task at fault: failed as a whole, or cut off
 * by a stop. While the database is unreachable a note cannot be deleted; it
 * is kept here and deleted before the next claim, so an outage does not
 * leave its tasks looking cut off.
 */
export class NoteKeeper {
  private unforgotten: string[] = [];
  /** Claim connections in use, with the note each is running (once noted). */
  private readonly connections = new Map<ClaimConnection, string | undefined>();

  lent(connection: ClaimConnection): void {
    this.connections.set(connection, undefined);
  }

  noted(connection: ClaimConnection, noteId: string): void {
    this.connections.set(connection, noteId);
  }

  returned(connection: ClaimConnection): void {
    this.connections.delete(connection);
  }

  /** Deletes the notes that could not be deleted before; keeps them if it still cannot. */
  async forgetEarlier(sql: Sql): Promise<void> {
    if (this.unforgotten.length === 0) return;
    const stale = this.unforgotten.splice(0);
    await forgetAttempts(sql, stale).catch(() => this.unforgotten.push(...stale));
  }

  /**
   * Deletes the note of a claim whose connection was just closed, once the
   * server has ended its session (until then the claim's transaction still
   * locks it); before the next claim if it cannot be deleted by then.
   */
  async forgetOnceReleased(pool: Sql, noteId: string): Promise<void> {
    const left = await forgetOnceUnlocked(pool, [noteId]);
    if (left.length > 0) this.forgetLater(noteId);
  }

  forgetLater(noteId: string): void {
    this.unforgotten.push(noteId);
  }

  /**
   * At stop: destroys every claim connection in use (their transactions roll
   * back, as a crash's would), then deletes their notes, so no attempt is
   * charged: the process chose to stop them, not their tasks.
   */
  async cutOffAll(pool: Sql): Promise<void> {
    const notes = [...this.connections.values()].filter((id): id is string => id !== undefined);
    for (const connection of this.connections.keys()) connection.cutOff();
    this.connections.clear();
    await forgetOnceUnlocked(pool, notes);
  }
}

/**
 * A note stays locked by its claim's transaction until the server has ended
 * the closed session, so this skips locked notes and tries again for a while.
 */
async function forgetOnceUnlocked(pool: Sql, notes: string[]): Promise<string[]> {
  for (let tries = 0; notes.length > 0 && tries < FORGET_STOPPED_TRIES; tries++) {
    if (tries > 0) await new Promise((resolve) => setTimeout(resolve, FORGET_STOPPED_INTERVAL_MS));
    const forgotten = await forgetAttempts(pool, notes).catch(() => [] as string[]);
    notes = notes.filter((id) => !forgotten.includes(id));
  }
  return notes;
}

/**
 * Attempt note ids, taken from delay_attempt's sequence a block at a time.
 * A claim knows its note's id before sending the message that writes the
 * note, so the claim statement can ride in that message, and a failure of
 * that message still knows which note to forget. Ids never go back: one
 * taken and unused is a gap in the sequence, as a rolled-back insert leaves.
 */
export class NoteIds {
  private ids: string[] = [];
  private refill: Promise<void> | undefined;

  async take(sql: Sql): Promise<string> {
    while (this.ids.length === 0) {
      // Claims that run out at once share one reservation.
      this.refill ??= reserveNoteIds(sql, NOTE_ID_BLOCK)
        .then((ids) => {
          this.ids.push(...ids);
        })
        .finally(() => {
          this.refill = undefined;
        });
      await this.refill;
    }
    return this.ids.shift() as string;
  }
}

/**
 * Advisory lock keys of attempts: a class of their own (the two-int form,
 * so it cannot meet a user's single-bigint keys), the attempt id within it.
 */
export const ATTEMPT_LOCK_CLASS = 0x6e64_6174; // 'ndat'
export const attemptLockKey = (column: string) => `(${column} % 2147483647)::int`;

/**
 * Notes, in a commit of its own, that this claim is about to run `ids`, and
 * takes a session-level advisory lock on the note: the lock lives exactly as
 * long as this connection's session, so while the session keeps it the claim is alive,
 * and once the session is gone (the process died, or the claim was cut off)
 * the note is an orphaned attempt that the next claim of each task charges (see
 * takeOrphanedNotes). The claim deletes the note in its transaction and drops
 * the lock only once that has committed (unlockNoteOnceGone). Returns the
 * note's id. (Claims send it with their BEGIN, in recordAttemptAndBegin; this
 * form is for a note on its own.)
 */
export async function recordAttempt(
  sql: Sql,
  instanceId: string,
  ids: TaskId[],
  now: Date,
): Promise<string> {
  const [row] = await sql.rows<{ id: string }>(
    noteStatement(NEXT_NOTE_ID, '$1', '$2::bigint[]', '$3'),
    [instanceId, ids, now],
  );
  return row.id;
}

/**
 * Takes `count` note ids from delay_attempt's own sequence, for notes written
 * later with their id given (see NoteIds): a claim then knows its note's id
 * before the message that writes it, so its claim statement can go in that
 * same message.
 */
async function reserveNoteIds(sql: Sql, count: number): Promise<string[]> {
  const rows = await sql.rows<{ id: string }>(
    `SELECT ${NEXT_NOTE_ID}::text AS id FROM generate_series(1, $1::int)`,
    [count],
  );
  return rows.map((row) => row.id);
}

/**
 * recordAttempt and the claim's BEGIN in one round trip: the note commits in
 * a transaction of its own (BEGIN … COMMIT: a statement before a BEGIN in the
 * same message would join its transaction instead), then the claim's
 * transaction begins. A script takes no parameters, so the values are
 * quoted into it: the instance id by pg's own quoting, ids checked as digits,
 * the time as an ISO literal. `noteId` comes from reserveNoteIds. `claim`,
 * a statement without parameters, is sent last in the same message, inside
 * the claim's transaction: a claim of fired tasks saves a round trip (see
 * claimInScript). Returns the claim's rows.
 */
export async function recordAttemptAndBegin(
  connection: ClaimConnection,
  noteId: string,
  instanceId: string,
  ids: TaskId[],
  now: Date,
  backstopMs: number,
  claim: string | undefined,
): Promise<unknown[] | undefined> {
  assertIds([noteId, ...ids]);
  // Prepared once per session where it can be, as the claim is: planning it was most of its cost.
  const note = connection.script.statement(NOTE_NAME, NOTE, [
    `${noteId}::bigint`,
    connection.literal(instanceId),
    `'{${ids.join(',')}}'::bigint[]`,
    `'${now.toISOString()}'::timestamptz`,
  ]);
  const results = await connection.begin(`BEGIN; ${note}; COMMIT`, backstopMs, claim);
  return claim ? results[results.length - 1] : undefined;
}

/**
 * Sent right after the claim's COMMIT, in the same round trip: drops the
 * note's session lock once the note is gone, that is once the claim that
 * deleted it committed. Never inside the claim transaction: an advisory
 * unlock is not undone by ROLLBACK, and a note left unlocked between a
 * rolled-back pass and its rerun would look orphaned to another instance, which
 * would charge a healthy task an attempt. `noteId` is a note id (digits).
 */
export function unlockNoteOnceGone(noteId: string): string {
  assertIds([noteId]);
  return `SELECT pg_advisory_unlock(${ATTEMPT_LOCK_CLASS}, ${attemptLockKey(noteId)})
     WHERE NOT EXISTS (SELECT 1 FROM delay_attempt WHERE id = ${noteId})`;
}

/** Deletes a claim's own note in its transaction, when it claims nothing (a refused gate's claim). */
export async function deleteNote(sql: Sql, noteId: string): Promise<void> {
  await sql.rows(`DELETE FROM delay_attempt WHERE id = $1`, [noteId]);
}

/** The note with its id given (from reserveNoteIds), as a claim's script sends it. */
const NOTE_NAME = 'nest_delay_note';

/** A new note id, as the column's default would give it. */
const NEXT_NOTE_ID = `nextval(pg_get_serial_sequence('delay_attempt', 'id'))`;

/** The note's one statement, given its four values as SQL. */
function noteStatement(id: string, instanceId: string, ids: string, now: string): string {
  // Committed without waiting for the WAL flush: the note matters only if the
  // app dies while Postgres lives on (and flushes it within milliseconds); if
  // Postgres itself crashes, the claims die with it and nothing is to charge.
  return `WITH async AS (
       SELECT set_config('synchronous_commit', 'off', true)
     ), noted AS (
       INSERT INTO delay_attempt (id, instance_id, task_ids, started_at, recorded_at)
       SELECT ${id}, ${instanceId}, ${ids}, ${now}, now() FROM async
       RETURNING id
     )
     SELECT id, pg_advisory_lock(${ATTEMPT_LOCK_CLASS}, ${attemptLockKey('id')})
     FROM noted`;
}

/**
 * Forgets the notes of claims that ended without their tasks being at fault
 * (failed as a whole, or stopped by a shutdown). Never waits: a note that a
 * transaction still holds is skipped; returns the ids it deleted.
 */
async function forgetAttempts(sql: Sql, attemptIds: string[]): Promise<string[]> {
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

const NOTE = noteStatement('$1::bigint', '$2::text', '$3::bigint[]', '$4::timestamptz');
