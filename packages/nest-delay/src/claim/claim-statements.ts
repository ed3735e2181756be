import type { TaskId } from '../task.types.js';
import {
  assertIds,
  type ClaimConnection,
  type ScriptStatements,
} from '../store/claim-connection.js';
import type { Sql } from '../store/sql.js';
import { PENDING_BY_ID, named, recordEvents, traceIdOf, type ClaimRow } from '../tasks/task-row.js';
import { WITHDRAWN } from '../tasks/task-transitions.js';

/* The claim's statements: its attempt note, the claim itself, and its verdict on an occurrence of a recurring schedule. */

/** A constant of ours as an SQL string literal (never built from input). */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** The SQL of overdueKept (occurrence-plan.ts): how many occurrences past the grace a policy runs, the latest ones. */
const KEPT = `CASE s.catch_up WHEN 'skip' THEN 0 WHEN 'one' THEN 1 ELSE s.catch_up_cap END`;

/**
 * The claim statement's verdict on an occurrence, from its schedule's row as
 * it is then: null (a one-off task, or it may run), else the WITHDRAWN reason:
 * its schedule is gone, paused, or of another generation; or it is overdue
 * by more than `overdueAfterMs`, on its first attempt, at its own instant, and
 * its policy keeps fewer overdue occurrences than there are after it.
 */
export function occurrenceVerdict(t: string, now: string, overdueMs: string): string {
  const overdueBefore = `(${now}::timestamptz - ${overdueMs}::float8 * interval '1 millisecond')`;
  return `CASE WHEN ${t}.schedule_name IS NULL THEN NULL ELSE (
         SELECT CASE
           WHEN s.name IS NULL THEN ${literal(WITHDRAWN.removed)}
           WHEN s.paused THEN ${literal(WITHDRAWN.paused)}
           WHEN ${t}.schedule_generation <> s.generation THEN ${literal(WITHDRAWN.ruleChanged)}
           WHEN ${t}.attempts = 0 AND ${t}.due_at = ${t}.occurrence_at AND ${t}.due_at < ${overdueBefore}
                AND (SELECT count(*) FROM (
                       SELECT 1 FROM delayed_task later
                       WHERE later.schedule_name = ${t}.schedule_name
                         AND later.occurrence_at > ${t}.occurrence_at
                         AND later.occurrence_at < ${overdueBefore}
                       LIMIT ${KEPT}) k) >= ${KEPT}
             THEN ${literal(WITHDRAWN.missed)} || ' (' || s.catch_up || ')'
         END
         FROM (SELECT 1) one LEFT JOIN delay_schedule s ON s.name = ${t}.schedule_name) END`;
}

/**
 * Appends the occurrences a claim dropped by catch-up to `delay_schedule_missed`
 * rather than update the schedule's row: the claim holds task locks, and a
 * pause holds that row while it waits on them (a deadlock). The planner folds them in.
 */
export const countMissed = (
  withdrawn: string,
  now: string,
) => `INSERT INTO delay_schedule_missed (schedule_name, missed, at)
       SELECT schedule_name, count(*), ${now} FROM ${withdrawn}
       WHERE reason LIKE ${literal(WITHDRAWN.missed + '%')}
       GROUP BY schedule_name`;

/** **withdraw**, a CTE of the claim statement: each row of `due` with a `withdrawn` reason (occurrenceVerdict) is cancelled with it as `last_error`. */
export const withdrawOccurrences = (due: string, now: string) => `UPDATE delayed_task t
       SET cancelled_at = ${now}, last_error = d.withdrawn, locked_by = NULL, updated_at = ${now}
       FROM ${due} d WHERE t.id = d.id AND d.withdrawn IS NOT NULL
       RETURNING t.id, t.schedule_name, d.withdrawn AS reason`;

/** The claim's event: an attempt of each claimed task with an entity started, on `instance`. */
const startedEvents = (claimed: string, now: string, instance: string) =>
  recordEvents(claimed, {
    event: named('started'),
    at: now,
    attempt: 'attempts',
    traceId: traceIdOf('trace_context'),
    instance,
  });

/** What one claim statement took, and what it left for a claim of its own. */
export interface Claimed {
  claimed: ClaimRow[];
  /**
   * Due tasks it locked but did not claim, because their last attempt was
   * cut off or another note lists them: each gets a claim of its own.
   */
  alone: TaskId[];
  /** Due, of a type the database says is limited or paused (FIRED_GATED): unclaimed, for the gate. */
  gated: TaskId[];
  /** Ids it did not lock that are still pending, as last committed (see PassedRow). */
  passed: PassedRow[];
  /** Due tasks of a type with no handler here: unclaimed, their lease let go. */
  unhandled: TaskId[];
}

/**
 * A task a claim was given but could not lock, still pending: its due time
 * was moved later, or another transaction held its row (SKIP LOCKED; the
 * row is then read as it was before that transaction). An id given to a
 * claim is claimed, left to run alone, gated, withdrawn, passed, or no longer pending:
 * the claim runner follows each of these, so no fired id is left nowhere.
 */
export interface PassedRow {
  id: TaskId;
  type: string;
  dueAtMs: number;
  lockedBy: string | null;
}

/**
 * The claim: takes the due, still pending tasks among `ids` inside the
 * caller's transaction, setting `executed_at` and counting the attempt. Set
 * here, in the same transaction as the handlers' effects, `executed_at` is
 * the exactly-once guarantee. SKIP LOCKED lets another instance holding the
 * same task move on instead of waiting; the pending test after the lock is
 * what stops a second execution. Rows are locked in no order (SKIP LOCKED
 * never waits, so lock order cannot deadlock) and returned in due order, ids
 * breaking ties: the order their handlers run in.
 *
 * In the same statement the claim ends its own attempt note ($3: deleted
 * with the claim, so it disappears exactly when the claim commits). In a
 * batch (`alone` false), a task flagged as cut off (`interrupted_at`) or
 * listed in any other note, dead or alive, is locked but left unclaimed and
 * returned in `alone`: it runs in a claim of its own, so a task that
 * kills its process takes no batch-mates with it. The claim clears the flag
 * (the one transition that does): if it rolls back, the flag is back.
 *
 * Limits are the gate's: the dispatcher sends it fired tasks of limited
 * types, and its claim clears its line's type (lineCheckInScript) before this
 * statement. One check stays, for a limit or pause this instance has not
 * read: such a task is left unclaimed, in `gated` (FIRED_GATED).
 *
 * $1–$7: the ids, now, the note, alone, after how long an occurrence is
 * overdue, the type the claim's line check cleared (null: none), and the
 * types handled here (a due task of any other type is left unclaimed and its
 * lease let go, in `unhandled`: an instance with its handler runs it). The
 * arrays left over go out as NULL when empty: each claimed row carries them,
 * and the driver parses each.
 */
export async function claimTasks(
  sql: Sql,
  ids: TaskId[],
  now: Date,
  noteId: string,
  alone: boolean,
  /** A gate's claim: its line's type, which its line check cleared (null: a plain claim). */
  cleared: string | null = null,
  /** Occurrences due longer ago are overdue (WindowPolicy.overdueAfterMs): two leases, the default's by default. */
  overdueAfterMs = 60_000,
  /** The types this instance has handlers for (null: any type); see WindowPolicy.handles. */
  handled: readonly string[] | null = null,
): Promise<Claimed> {
  const rows = await sql.rows<ClaimedWire>(
    FIRED_CLAIM,
    [ids, now, noteId, alone, overdueAfterMs, cleared, handled],
    // Prepared where it can be: planning it cost Postgres more than running it for a few tasks.
    'nest_delay_claim',
  );
  return readClaimed(rows, now);
}

/**
 * The claim of fired tasks (not alone, not a gate's) as a statement of a script,
 * its values quoted in: sent in the message that writes its note and begins
 * its transaction (recordAttemptAndBegin), it saves the claim a round trip.
 * Prepared once per session where the connection can (SQL PREPARE, then
 * EXECUTE), else the statement itself with its values in place.
 */
export function claimInScript(
  script: ScriptStatements,
  ids: TaskId[],
  now: Date,
  noteId: string,
  overdueAfterMs: number,
  handled: readonly string[],
): string {
  assertIds([noteId, ...ids]);
  return script.statement('nest_delay_claim_script', FIRED_CLAIM, [
    `'{${ids.join(',')}}'::bigint[]`,
    `'${now.toISOString()}'::timestamptz`,
    `${noteId}::bigint`,
    'false',
    `${Math.round(overdueAfterMs)}`,
    'NULL::text',
    `ARRAY[${handled.map((type) => script.literal(type)).join(', ')}]::text[]`,
  ]);
}

/** What a claim statement's rows say (claimTasks, or claimInScript's rows); `now` is the claim's. */
export function readClaimed(rows: unknown[], now: Date): Claimed {
  const wire = rows as ClaimedWire[];
  const first = wire[0];
  return {
    claimed: wire.filter((row) => row.id !== null).map((row) => fromWire(row, now)),
    alone: first?.alone ?? [],
    gated: first?.gated ?? [],
    passed: (first?.passed ?? []).map((p) => ({
      id: p.id,
      type: p.type,
      dueAtMs: Math.floor(p.due),
      lockedBy: p.locked_by,
    })),
    unhandled: first?.unhandled ?? [],
  };
}

export type ClaimedWire = ClaimWire & {
  alone: TaskId[] | null;
  gated: TaskId[] | null;
  passed: Array<{ id: TaskId; type: string; due: number; locked_by: string | null }> | null;
  unhandled: TaskId[] | null;
};

/**
 * What the claim returns of a row: not the four columns it sets itself
 * (executed_at and updated_at are its `now`; cancelled_at and dead_at were
 * null for it to claim the row), which every claimed row would carry.
 */
type ClaimWire = Omit<ClaimRow, 'executed_at' | 'updated_at' | 'cancelled_at' | 'dead_at'>;

function fromWire(row: ClaimWire, now: Date): ClaimRow {
  return {
    id: row.id,
    type: row.type,
    key: row.key,
    entity: row.entity,
    payload: row.payload,
    trace_context: row.trace_context,
    due_at: row.due_at,
    executed_at: new Date(now.getTime()),
    cancelled_at: null,
    dead_at: null,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    last_error: row.last_error,
    locked_by: row.locked_by,
    created_at: row.created_at,
    updated_at: new Date(now.getTime()),
    schedule_name: row.schedule_name,
    occurrence_at: row.occurrence_at,
    previous_occurrence_at: row.previous_occurrence_at,
    overlap: row.overlap,
  };
}

// ---------------------------------------------------------------- the claim's attempt note

/**
 * Advisory lock keys of attempts: a class of their own (the two-int form,
 * so it cannot meet a user's single-bigint keys), the attempt id within it.
 */
export const ATTEMPT_LOCK_CLASS = 0x6e64_6174; // 'ndat'
export const attemptLockKey = (column: string) => `(${column} % 2147483647)::int`;

/** Takes `count` note ids from delay_attempt's own sequence, for notes written later with their id given (NoteIds). */
export async function reserveNoteIds(sql: Sql, count: number): Promise<string[]> {
  const rows = await sql.rows<{ id: string }>(
    `SELECT ${NEXT_NOTE_ID}::text AS id FROM generate_series(1, $1::int)`,
    [count],
  );
  return rows.map((row) => row.id);
}

/**
 * Notes, in a commit of its own, that this claim is about to run `ids`, and
 * takes a session-level advisory lock on the note: while the session keeps
 * it the claim is alive; once the session is gone (the process died, or the
 * claim was cut off) the note is orphaned, and the next claim of each task
 * charges it (takeOrphanedNotes). The claim deletes the note in its
 * transaction and drops the lock once that has committed (unlockNoteOnceGone).
 *
 * Then, in the same message, the claim's BEGIN (BEGIN … COMMIT first: a
 * statement before a BEGIN in the same message would join its transaction)
 * and `claim`, a statement without parameters (claimInScript), whose rows
 * it returns. A script takes no parameters, so the values are quoted in: the
 * instance id by pg, ids checked as digits, the time as an ISO literal.
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
  const note = connection.script.statement('nest_delay_note', NOTE, [
    `${noteId}::bigint`,
    connection.script.literal(instanceId),
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

/** A new note id, as the column's default would give it. */
const NEXT_NOTE_ID = `nextval(pg_get_serial_sequence('delay_attempt', 'id'))`;

/**
 * The note, its id given ($1, from reserveNoteIds), locked by the session.
 * Committed without waiting for the WAL flush: the note matters only if the
 * app dies while Postgres lives on (and flushes it within milliseconds); if
 * Postgres itself crashes, the claims die with it and nothing is to charge.
 */
export const NOTE = `WITH async AS (
       SELECT set_config('synchronous_commit', 'off', true)
     ), noted AS (
       INSERT INTO delay_attempt (id, instance_id, task_ids, started_at, recorded_at)
       SELECT $1::bigint, $2::text, $3::bigint[], $4::timestamptz, now() FROM async
       RETURNING id
     )
     SELECT id, pg_advisory_lock(${ATTEMPT_LOCK_CLASS}, ${attemptLockKey('id')})
     FROM noted`;

/**
 * The database says the task's type is limited or paused, and no line check
 * cleared it ($6): the dispatcher routes by a picture that may be a second
 * old, the database decides. Every type handled here has its row (declareLimits).
 */
const FIRED_GATED = `(t.type IS DISTINCT FROM $6::text AND (l.paused_at IS NOT NULL OR CASE
                WHEN l.overridden THEN l.concurrency IS NOT NULL OR l.rate_starts IS NOT NULL
                ELSE l.declared_concurrency IS NOT NULL OR l.declared_rate_starts IS NOT NULL END))`;

// Built once, after everything its text uses: one text per name, as a prepared statement needs.
/** The claim statement; its parameters are listed in claimTasks. */
const FIRED_CLAIM = `WITH mine AS (
       DELETE FROM delay_attempt WHERE id = $3 RETURNING instance_id
     ), due AS (
       SELECT t.id, t.interrupted_at, t.type, t.due_at, handled,
              handled AND ${FIRED_GATED} AS gated,
              -- Schedules: an occurrence its schedule no longer wants, or missed, is withdrawn.
              CASE WHEN handled THEN ${occurrenceVerdict('t', '$2', '$5')} END AS withdrawn
       FROM delayed_task t LEFT JOIN delay_type_limit l ON l.type = t.type,
            LATERAL (SELECT $7::text[] IS NULL OR t.type = ANY($7::text[]) AS handled) h
       WHERE t.id = ANY($1::bigint[]) AND ${PENDING_BY_ID} AND t.due_at <= $2
       FOR UPDATE OF t SKIP LOCKED
     ), withdrawn AS (
       ${withdrawOccurrences('due', '$2')}
     ), missed AS (
       ${countMissed('withdrawn', '$2')}
     ), listed AS MATERIALIZED (
       -- Read once, whatever the plan: joined to due instead, a generic plan
       -- that guessed one due row repeated this index scan for every due row.
       -- Ids of other notes that are not due here are harmless to runnable's NOT IN.
       SELECT task_id FROM delay_attempt a, unnest(a.task_ids) AS task_id
       WHERE NOT $4::boolean AND a.id <> $3 AND a.task_ids && ARRAY(SELECT id FROM due)
         AND a.recorded_at >= pg_postmaster_start_time() AND task_id IS NOT NULL
     ), runnable AS (
       SELECT id FROM due
       WHERE handled AND NOT gated AND withdrawn IS NULL
         AND ($4::boolean OR (interrupted_at IS NULL AND id NOT IN (SELECT task_id FROM listed)))
     ), claimed AS (
       UPDATE delayed_task t
       SET executed_at = $2, attempts = t.attempts + 1, interrupted_at = NULL, updated_at = $2
       FROM runnable WHERE t.id = runnable.id
       RETURNING t.id, t.type, t.key, t.entity, t.payload, t.attempts, t.max_attempts, t.last_error, t.trace_context,
                 t.locked_by, t.due_at, t.created_at,
                 t.schedule_name,
                 t.occurrence_at, t.previous_occurrence_at,
                 (SELECT s.overlap FROM delay_schedule s WHERE s.name = t.schedule_name) AS overlap
     ), handed_back AS (
       -- A type with no handler here: its lease goes, for an instance that has one.
       UPDATE delayed_task t SET locked_by = NULL
       FROM due WHERE t.id = due.id AND NOT due.handled AND t.locked_by IS NOT NULL
     ), passed AS (
       -- The ids it did not lock (none, most often: no row read then).
       SELECT t.id, t.type, t.due_at, t.locked_by
       FROM (SELECT unnest($1::bigint[]) EXCEPT SELECT id FROM due) AS m(id)
       JOIN delayed_task t ON t.id = m.id
       WHERE ${PENDING_BY_ID}
     ), started AS (
       -- [timeline] a task with an entity records its attempt, by the note's instance.
       ${startedEvents('claimed', '$2', '(SELECT instance_id FROM mine)')}
     )
     SELECT claimed.*, left_over.alone, left_over.gated, left_over.passed, left_over.unhandled
     FROM (SELECT NULLIF(ARRAY(SELECT id FROM due WHERE handled AND NOT gated AND withdrawn IS NULL
                                  AND id NOT IN (SELECT id FROM runnable)), '{}') AS alone,
                  NULLIF(ARRAY(SELECT id FROM due WHERE NOT handled), '{}') AS unhandled,
                  NULLIF(ARRAY(SELECT id FROM due WHERE gated AND withdrawn IS NULL), '{}') AS gated,
                  (SELECT json_agg(json_build_object('id', id::text, 'type', type,
                                                     'due', extract(epoch FROM due_at) * 1000, 'locked_by', locked_by))
                   FROM passed) AS passed) left_over
     LEFT JOIN claimed ON true
     ORDER BY claimed.due_at, claimed.id`;
