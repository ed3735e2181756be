import type { TaskId } from '../task.types.js';
import { PENDING } from '../tasks/pending.js';
import type { Sql } from '../store/sql.js';

/** A row of `delay_schedule`. */
export interface ScheduleRow {
  name: string;
  type: string;
  cron: string | null;
  time_zone: string;
  every_ms: string | null;
  payload: unknown;
  catch_up: 'skip' | 'one' | 'all';
  catch_up_cap: number;
  overlap: 'allow' | 'skip';
  paused: boolean;
  in_code: boolean;
  next_at: Date | null;
  last_at: Date | null;
  missed: string;
  created_at: Date;
  updated_at: Date;
}

/** What defines a schedule; a change of any of these replans it. */
export interface ScheduleSpec {
  name: string;
  type: string;
  cron: string | null;
  timeZone: string;
  everyMs: number | null;
  payloadJson: string;
  catchUp: 'skip' | 'one' | 'all';
  catchUpCap: number;
  overlap: 'allow' | 'skip';
  inCode: boolean;
}

/**
 * Occurrences of schedule `name` planned ahead that have not come due by
 * `now` (SQL expressions): deleted, not cancelled, so that replanning can
 * insert those instants again (one task per occurrence, ever, is the unique
 * index's promise). A wheel still holding one finds no row when it fires,
 * and lets it go.
 */
const unplan = (name: string, now: string) => `DELETE FROM delayed_task
     WHERE schedule_name = ${name} AND ${PENDING} AND due_at > ${now} AND attempts = 0`;

/**
 * Creates or updates a schedule. A new one, or one whose rule, type,
 * payload or policies changed, starts at `nextAt` (its first occurrence
 * from now) with what was planned of the old rule unplanned; an unchanged
 * one keeps its place. Returns whether it was created or changed.
 */
export async function upsertSchedule(
  sql: Sql,
  spec: ScheduleSpec,
  nextAt: Date | null,
  now: Date,
): Promise<boolean> {
  const [row] = await sql.rows<{ changed: boolean }>(
    `WITH old AS (
       SELECT * FROM delay_schedule WHERE name = $1 FOR UPDATE
     ), upserted AS (
       INSERT INTO delay_schedule (name, type, cron, time_zone, every_ms, payload, catch_up,
                                   catch_up_cap, overlap, in_code, next_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12, $12)
       ON CONFLICT (name) DO UPDATE SET
         type = EXCLUDED.type, cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone,
         every_ms = EXCLUDED.every_ms, payload = EXCLUDED.payload, catch_up = EXCLUDED.catch_up,
         catch_up_cap = EXCLUDED.catch_up_cap, overlap = EXCLUDED.overlap, in_code = EXCLUDED.in_code,
         next_at = EXCLUDED.next_at, updated_at = EXCLUDED.updated_at
       WHERE (delay_schedule.type, delay_schedule.cron, delay_schedule.time_zone,
              delay_schedule.every_ms, delay_schedule.payload, delay_schedule.catch_up,
              delay_schedule.catch_up_cap, delay_schedule.overlap, delay_schedule.in_code)
         IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.cron, EXCLUDED.time_zone, EXCLUDED.every_ms,
              EXCLUDED.payload, EXCLUDED.catch_up, EXCLUDED.catch_up_cap, EXCLUDED.overlap,
              EXCLUDED.in_code)
       RETURNING name
     ), unplanned AS (
       ${unplan('$1', '$12')} AND EXISTS (SELECT 1 FROM upserted) AND EXISTS (SELECT 1 FROM old)
     )
     SELECT EXISTS (SELECT 1 FROM upserted) AS changed`,
    [
      spec.name,
      spec.type,
      spec.cron,
      spec.timeZone,
      spec.everyMs,
      spec.payloadJson,
      spec.catchUp,
      spec.catchUpCap,
      spec.overlap,
      spec.inCode,
      nextAt,
      now,
    ],
  );
  return row.changed;
}

/**
 * Removes schedules and unplans their occurrences not yet due, in one
 * statement; every instance stops planning them at once, since planning
 * reads the table. `names` null: every schedule declared in code that is
 * not in `keep` (a deploy removed it from the code).
 */
export async function removeSchedules(
  sql: Sql,
  names: string[] | null,
  keep: string[],
  now: Date,
): Promise<string[]> {
  const rows = await sql.rows<{ name: string }>(
    `WITH gone AS (
       DELETE FROM delay_schedule
       WHERE CASE WHEN $3::boolean THEN in_code AND NOT (name = ANY($4::text[]))
                  ELSE name = ANY($1::text[]) END
       RETURNING name
     ), unplanned AS (
       ${unplan('ANY(ARRAY(SELECT name FROM gone))', '$2')}
     )
     SELECT name FROM gone`,
    [names ?? [], now, names === null, keep],
  );
  return rows.map((row) => row.name);
}

/**
 * Pauses a schedule: nothing more is planned, and what was planned ahead
 * is unplanned, its next occurrence set back to the earliest unplanned one
 * so that resuming (with its catch-up policy) accounts for each.
 */
export async function pauseSchedule(sql: Sql, name: string, now: Date) {
  const [row] = await sql.rows<ScheduleRow>(
    `WITH unplanned AS (
       ${unplan('$1', '$2')}
       RETURNING occurrence_at
     )
     UPDATE delay_schedule s
     SET paused = true, updated_at = $2,
         next_at = coalesce(least(s.next_at, (SELECT min(occurrence_at) FROM unplanned)), s.next_at)
     WHERE s.name = $1
     RETURNING s.*`,
    [name, now],
  );
  return row;
}

export async function resumeSchedule(sql: Sql, name: string, now: Date) {
  const [row] = await sql.rows<ScheduleRow>(
    `UPDATE delay_schedule SET paused = false, updated_at = $2 WHERE name = $1 RETURNING *`,
    [name, now],
  );
  return row;
}

/**
 * Whether any schedule has an occurrence to plan before `horizon`: one
 * statement, outside a transaction, so a planner with nothing to do sends
 * this alone (not BEGIN, the locking read and COMMIT) every round.
 */
export async function anyScheduleDue(sql: Sql, horizon: Date): Promise<boolean> {
  const [row] = await sql.rows<{ due: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM delay_schedule WHERE NOT paused AND next_at < $1) AS due`,
    [horizon],
  );
  return row.due;
}

/**
 * The schedules whose next occurrence comes before `horizon`, locked for
 * this planning transaction; another instance planning at the same moment
 * skips them (SKIP LOCKED), so each occurrence is planned once.
 */
export function lockDueSchedules(sql: Sql, horizon: Date, limit: number) {
  return sql.rows<ScheduleRow>(
    `SELECT * FROM delay_schedule
     WHERE NOT paused AND next_at < $1
     ORDER BY next_at
     LIMIT $2
     FOR UPDATE SKIP LOCKED`,
    [horizon, limit],
  );
}

/**
 * One task per planned occurrence, due at the occurrence; an occurrence
 * that already has its task (the unique index) is not inserted again.
 * Returns the ids inserted.
 */
export async function insertOccurrences(
  sql: Sql,
  schedule: ScheduleRow,
  occurrences: Array<{ atMs: number; previousMs: number | null }>,
  maxAttempts: number,
  now: Date,
): Promise<TaskId[]> {
  if (occurrences.length === 0) return [];
  const rows = await sql.rows<{ id: TaskId }>(
    `INSERT INTO delayed_task (type, payload, due_at, max_attempts, created_at, updated_at,
                               schedule_name, occurrence_at, previous_occurrence_at)
     SELECT $1, $2::jsonb, o.at, $3, $4, $4, $5, o.at, o.previous
     FROM unnest($6::timestamptz[], $7::timestamptz[]) AS o(at, previous)
     ON CONFLICT (schedule_name, occurrence_at) WHERE schedule_name IS NOT NULL DO NOTHING
     RETURNING id`,
    [
      schedule.type,
      JSON.stringify(schedule.payload),
      maxAttempts,
      now,
      schedule.name,
      occurrences.map((o) => new Date(o.atMs)),
      occurrences.map((o) => (o.previousMs === null ? null : new Date(o.previousMs))),
    ],
  );
  return rows.map((row) => row.id);
}

/** Moves a schedule past what was just planned. */
export async function advanceSchedule(
  sql: Sql,
  name: string,
  nextAt: Date | null,
  lastAt: Date | null,
  missed: number,
  now: Date,
): Promise<void> {
  await sql.rows(
    `UPDATE delay_schedule
     SET next_at = $2, last_at = coalesce($3, last_at), missed = missed + $4, updated_at = $5
     WHERE name = $1`,
    [name, nextAt, lastAt, missed, now],
  );
}

/** A schedule with its latest occurrence's task, for lists. */
export interface ScheduleListRow extends ScheduleRow {
  last_task_id: TaskId | null;
  last_occurrence_at: Date | null;
  last_state: 'pending' | 'executed' | 'cancelled' | 'dead' | null;
  last_error: string | null;
  next_planned_at: Date | null;
}

/**
 * Every schedule by name, with the latest occurrence that came due and its
 * outcome, and the earliest planned one still to come.
 */
/** Every schedule, or the one named `name` (what `upsert` and `get` return, without listing all). */
export function listSchedules(sql: Sql, now: Date, name: string | null = null) {
  return sql.rows<ScheduleListRow>(
    `SELECT s.*, t.id AS last_task_id, t.occurrence_at AS last_occurrence_at, t.last_error,
            CASE WHEN t.id IS NULL THEN NULL
                 WHEN t.executed_at IS NOT NULL THEN 'executed'
                 WHEN t.cancelled_at IS NOT NULL THEN 'cancelled'
                 WHEN t.dead_at IS NOT NULL THEN 'dead'
                 ELSE 'pending' END AS last_state,
            (SELECT min(p.occurrence_at) FROM delayed_task p
             WHERE p.schedule_name = s.name AND p.occurrence_at > $1
               AND num_nulls(p.executed_at, p.cancelled_at, p.dead_at) = 3
            ) AS next_planned_at
     FROM delay_schedule s
     LEFT JOIN LATERAL (
       SELECT * FROM delayed_task d
       WHERE d.schedule_name = s.name AND d.occurrence_at <= $1
       ORDER BY d.occurrence_at DESC LIMIT 1
     ) t ON true
     WHERE $2::text IS NULL OR s.name = $2
     ORDER BY s.name`,
    [now, name],
  );
}

/**
 * With overlap 'skip': whether an earlier occurrence of the same schedule is
 * retrying (pending after a failed attempt) as this one comes due, in which
 * case this one is skipped. One that only waits its turn (a catch-up, or a
 * claim of it not yet committed) is not counted: its attempts are still 0
 * as any other transaction sees it.
 */
export async function earlierOccurrenceRetrying(
  sql: Sql,
  scheduleName: string,
  occurrenceAt: Date,
): Promise<boolean> {
  const [row] = await sql.rows<{ pending: boolean }>(
    // The pending test is written so that it matches no partial index: with
    // statistics older than the planned rows, Postgres otherwise scanned every
    // pending task (190 ms at 360,000 rows) instead of this schedule's
    // occurrences by delayed_task_occurrence_idx.
    `SELECT EXISTS (
       SELECT 1 FROM delayed_task t JOIN delay_schedule s ON s.name = t.schedule_name
       WHERE t.schedule_name = $1 AND t.occurrence_at < $2
         AND num_nulls(t.executed_at, t.cancelled_at, t.dead_at) = 3
         AND t.attempts > 0 AND s.overlap = 'skip'
     ) AS pending`,
    [scheduleName, occurrenceAt],
  );
  return row.pending;
}

/**
 * The next moment something happens to schedules after `now` (epoch ms), or
 * null: a planned occurrence falls due, or a schedule's next occurrence
 * comes within `windowMs` (when a planner plans it).
 */
export async function nextScheduleEvent(
  sql: Sql,
  now: Date,
  windowMs: number,
): Promise<number | null> {
  const [row] = await sql.rows<{ ms: number | null }>(
    `SELECT (extract(epoch FROM least(
       (SELECT min(next_at) - $2 * interval '1 millisecond' + interval '1 millisecond'
        FROM delay_schedule WHERE NOT paused),
       (SELECT min(due_at) FROM delayed_task
        WHERE schedule_name IS NOT NULL AND ${PENDING} AND due_at > $1)
     )) * 1000)::float8 AS ms`,
    [now, windowMs],
  );
  return row.ms;
}
