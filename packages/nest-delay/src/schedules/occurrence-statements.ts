import type { Sql } from '../store/sql.js';
import { PENDING } from '../tasks/pending.js';
import { WITHDRAWN } from '../tasks/task-transitions.js';

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

/** **withdraw**, a CTE of the claim statement: each row of `due` with a `withdrawn` reason (occurrenceVerdict) is cancelled with it as `last_error`. */
export const withdrawOccurrences = (due: string, now: string) => `UPDATE delayed_task t
       SET cancelled_at = ${now}, last_error = d.withdrawn, locked_by = NULL, updated_at = ${now}
       FROM ${due} d WHERE t.id = d.id AND d.withdrawn IS NOT NULL
       RETURNING t.id, t.schedule_name, d.withdrawn AS reason`;
