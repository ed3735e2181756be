import type { TaskId } from '../task.types.js';
import type { ScheduleRow } from './schedule-statements.js';
import { UNDECLARED } from './declaration-statements.js';
import type { Sql } from '../store/sql.js';

/** A schedule may be planned: not paused, not set aside after a failed plan (until `now`). */
const PLANNABLE = `NOT paused AND (plan_retry_at IS NULL OR plan_retry_at <= $2)`;

/** Whether any schedule is due to plan, or undeclared: one statement, so a planner with nothing to do sends only this. */
export async function planningDue(
  sql: Sql,
  horizon: Date,
  now: Date,
  self: string,
): Promise<{ due: boolean; undeclared: boolean }> {
  const [row] = await sql.rows<{ due: boolean; undeclared: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM delay_schedule WHERE ${PLANNABLE} AND next_at < $1) AS due,
            EXISTS (SELECT 1 FROM delay_schedule s WHERE s.in_code AND ${UNDECLARED('s', '$3')}) AS undeclared`,
    [horizon, now, self],
  );
  return row;
}

/** The schedules due to plan before `horizon`, locked SKIP LOCKED, so each occurrence is planned by one instance. */
export function lockDueSchedules(sql: Sql, horizon: Date, now: Date, limit: number) {
  return sql.rows<ScheduleRow>(
    `SELECT * FROM delay_schedule
     WHERE ${PLANNABLE} AND next_at < $1
     ORDER BY next_at
     LIMIT $3
     FOR UPDATE SKIP LOCKED`,
    [horizon, now, limit],
  );
}

/** A schedule whose plan failed is set aside until `retryAt`, its error kept, so it neither blocks the page nor costs every round. */
export async function setAsideSchedule(
  sql: Sql,
  name: string,
  error: string,
  retryAt: Date,
  now: Date,
): Promise<void> {
  await sql.rows(
    `UPDATE delay_schedule
     SET plan_error = $2, plan_failures = plan_failures + 1, plan_retry_at = $3, updated_at = $4
     WHERE name = $1`,
    [name, error, retryAt, now],
  );
}

/** One task per occurrence; one that already has its task (the unique index) is not inserted again. */
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
                               schedule_name, occurrence_at, previous_occurrence_at,
                               schedule_generation)
     SELECT $1, $2::jsonb, o.at, $3, $4, $4, $5, o.at, o.previous, $8
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
      schedule.generation,
    ],
  );
  return rows.map((row) => row.id);
}

/** Moves a schedule past what was just planned, clears a plan failure, and folds in the claims' missed counts. */
export async function advanceSchedule(
  sql: Sql,
  name: string,
  nextAt: Date | null,
  lastAt: Date | null,
  missed: number,
  now: Date,
): Promise<void> {
  await sql.rows(
    `WITH folded AS (
       DELETE FROM delay_schedule_missed WHERE schedule_name = $1 RETURNING missed
     )
     UPDATE delay_schedule
     SET next_at = $2, last_at = coalesce($3, last_at),
         missed = missed + $4 + coalesce((SELECT sum(missed) FROM folded), 0), updated_at = $5,
         plan_error = NULL, plan_failures = 0, plan_retry_at = NULL
     WHERE name = $1`,
    [name, nextAt, lastAt, missed, now],
  );
}

/**
 * With overlap 'skip': whether an earlier occurrence is retrying (pending
 * with attempts > 0). One that is only waiting to run (a catch-up, or an
 * uncommitted claim of it) still shows 0 attempts to other transactions.
 */
export async function earlierOccurrenceRetrying(
  sql: Sql,
  scheduleName: string,
  occurrenceAt: Date,
): Promise<boolean> {
  const [row] = await sql.rows<{ pending: boolean }>(
    // The pending test matches no partial index: with stale statistics Postgres
    // would scan every pending task instead of using delayed_task_occurrence_idx.
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
