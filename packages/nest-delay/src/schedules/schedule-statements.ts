import type { TaskId } from '../task.types.js';
import { PENDING } from '../tasks/task-row.js';
import type { Database, Sql } from '../store/sql.js';

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
  /** Bumped by every change of the rule; each occurrence records the one it was planned under. */
  generation: string;
  /** Why its last plan failed (it is set aside until `plan_retry_at`); null once one succeeds. */
  plan_error: string | null;
  plan_failures: number;
  plan_retry_at: Date | null;
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
 * Every change below locks the schedule's row first, then unplans in a
 * statement of its own: it waits for a planner holding the row to commit,
 * and the unplan's later snapshot sees what that planner inserted (one
 * statement's snapshot, from before the wait, would miss it).
 */
const lockSchedules = (sql: Sql, names: string[]) =>
  sql.rows<{ name: string }>(
    `SELECT name FROM delay_schedule WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE`,
    [names],
  );

/**
 * Creates or updates a schedule; a new or changed one starts at `nextAt`
 * under a new generation, the old rule's occurrences unplanned, and an
 * unchanged one keeps its place. Returns whether it was created or changed.
 */
export function upsertSchedule(
  db: Database,
  spec: ScheduleSpec,
  nextAt: Date | null,
  now: Date,
): Promise<boolean> {
  return db.transaction(async (sql) => {
    await lockSchedules(sql, [spec.name]);
    const changed = await sql.rows<{ name: string }>(
      `INSERT INTO delay_schedule (name, type, cron, time_zone, every_ms, payload, catch_up,
                                   catch_up_cap, overlap, in_code, next_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12, $12)
       ON CONFLICT (name) DO UPDATE SET
         type = EXCLUDED.type, cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone,
         every_ms = EXCLUDED.every_ms, payload = EXCLUDED.payload, catch_up = EXCLUDED.catch_up,
         catch_up_cap = EXCLUDED.catch_up_cap, overlap = EXCLUDED.overlap, in_code = EXCLUDED.in_code,
         next_at = EXCLUDED.next_at, updated_at = EXCLUDED.updated_at,
         generation = delay_schedule.generation + 1,
         plan_error = NULL, plan_failures = 0, plan_retry_at = NULL
       WHERE (delay_schedule.type, delay_schedule.cron, delay_schedule.time_zone,
              delay_schedule.every_ms, delay_schedule.payload, delay_schedule.catch_up,
              delay_schedule.catch_up_cap, delay_schedule.overlap, delay_schedule.in_code)
         IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.cron, EXCLUDED.time_zone, EXCLUDED.every_ms,
              EXCLUDED.payload, EXCLUDED.catch_up, EXCLUDED.catch_up_cap, EXCLUDED.overlap,
              EXCLUDED.in_code)
       RETURNING name`,
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
    if (changed.length === 0) return false;
    await unplanOccurrences(sql, [spec.name], now);
    return true;
  });
}

/** Removes schedules with their occurrences planned ahead, in one transaction; returns the names removed. */
export function removeSchedules(db: Database, names: string[], now: Date): Promise<string[]> {
  return db.transaction(async (sql) => {
    const locked = (await lockSchedules(sql, names)).map((row) => row.name);
    return removeLocked(sql, locked, now);
  });
}

/** Unplans and deletes schedules whose rows the caller's transaction holds. */
export async function removeLocked(sql: Sql, names: string[], now: Date): Promise<string[]> {
  if (names.length === 0) return [];
  await unplanOccurrences(sql, names, now);
  await sql.rows(`DELETE FROM delay_schedule_missed WHERE schedule_name = ANY($1::text[])`, [
    names,
  ]);
  const rows = await sql.rows<{ name: string }>(
    `DELETE FROM delay_schedule WHERE name = ANY($1::text[]) RETURNING name`,
    [names],
  );
  return rows.map((row) => row.name);
}

/** Pauses a schedule, unplanning what was planned ahead and setting `next_at` back to the earliest, so resuming accounts for each; undefined if none. */
export function pauseSchedule(
  db: Database,
  name: string,
  now: Date,
): Promise<ScheduleRow | undefined> {
  return db.transaction(async (sql) => {
    if ((await lockSchedules(sql, [name])).length === 0) return undefined;
    const [unplanned] = await unplanOccurrences(sql, [name], now);
    const [row] = await sql.rows<ScheduleRow>(
      `UPDATE delay_schedule
       SET paused = true, updated_at = $2, next_at = least(next_at, $3::timestamptz)
       WHERE name = $1
       RETURNING *`,
      [name, now, unplanned?.first_at ?? null],
    );
    return row;
  });
}

export async function resumeSchedule(sql: Sql, name: string, now: Date) {
  const [row] = await sql.rows<ScheduleRow>(
    `UPDATE delay_schedule SET paused = false, updated_at = $2 WHERE name = $1 RETURNING *`,
    [name, now],
  );
  return row;
}

/** A schedule with its latest occurrence's task, for lists. */
export interface ScheduleListRow extends ScheduleRow {
  last_task_id: TaskId | null;
  last_occurrence_at: Date | null;
  last_state: 'pending' | 'executed' | 'cancelled' | 'dead' | null;
  last_error: string | null;
  next_planned_at: Date | null;
  /** `missed` with the claims' counts not yet folded in (see countMissed). */
  missed_total: string;
}

/** Every schedule (or the one named `name`), with its latest occurrence that came due, its outcome, and the earliest planned one to come. */
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
            ) AS next_planned_at,
            s.missed + coalesce((SELECT sum(m.missed) FROM delay_schedule_missed m
                                 WHERE m.schedule_name = s.name), 0) AS missed_total
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
 * **unplan**: deletes the occurrences of schedules `names` planned ahead
 * (pending, not due by `now`, never started); returns each schedule's
 * earliest. Precondition: the caller holds the schedules' rows FOR UPDATE and
 * runs this as a statement of its own, so its snapshot includes what a
 * planner committed before the lock. A wheel still holding one finds no row.
 */
export function unplanOccurrences(sql: Sql, names: string[], now: Date) {
  return sql.rows<{ schedule_name: string; first_at: Date }>(
    `WITH unplanned AS (
       DELETE FROM delayed_task
       WHERE schedule_name = ANY($1::text[]) AND ${PENDING} AND due_at > $2 AND attempts = 0
       RETURNING schedule_name, occurrence_at
     )
     SELECT schedule_name, min(occurrence_at) AS first_at FROM unplanned GROUP BY schedule_name`,
    [names, now],
  );
}
