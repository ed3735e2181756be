import type { Sql } from '../store/sql.js';
import { PENDING } from '../tasks/pending.js';
import { WITHDRAWN } from '../tasks/task-transitions.js';

/*
 * The statements of a schedule's planned occurrences that the claim and the
 * schedules run: the verdict read at the claim, the **withdraw** and
 * **unplan** transitions (decided in task-transitions.ts; docs/how-it-works.md,
 * "State transitions", has the table) and the missed count.
 */

/** A constant of ours as an SQL string literal (never built from input). */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** The SQL of overdueKept (occurrence-plan.ts): how many occurrences past the grace a policy runs, the latest ones. */
const KEPT = `CASE s.catch_up WHEN 'skip' THEN 0 WHEN 'one' THEN 1 ELSE s.catch_up_cap END`;

/**
 * Whether an occurrence may run, decided in the claim's statement from its
 * schedule's row as it is then, whichever instance claims it: null for a
 * one-off task or an occurrence that may run, else why it is withdrawn
 * (WITHDRAWN, task-transitions.ts):
 * - its schedule is gone, paused, or its rule changed since it was planned
 *   (`schedule_generation`; null, planned before generations, passes);
 * - it is overdue by more than `overdueAfterMs` (occurrence-plan.ts), on its
 *   first attempt, at its own instant (not moved by a reschedule or a
 *   snooze), and its policy keeps fewer such occurrences than there are after
 *   it (planned rows, whatever their state: an occurrence the planner already
 *   counted as missed has none).
 * `t`: the task's alias; `now`, `overdueMs`: the statement's parameters.
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
 * Counts the occurrences a claim dropped by catch-up (rows of CTE
 * `withdrawn`) in `delay_schedule_missed`, appended: the claim holds task
 * locks, and waiting there on a schedule's row could deadlock with a pause
 * that holds the row and waits on those tasks. The planner folds the counts
 * into `delay_schedule.missed` (foldMissed).
 */
export const countMissed = (
  withdrawn: string,
  now: string,
) => `INSERT INTO delay_schedule_missed (schedule_name, missed, at)
       SELECT schedule_name, count(*), ${now} FROM ${withdrawn}
       WHERE reason LIKE ${literal(WITHDRAWN.missed + '%')}
       GROUP BY schedule_name`;

/**
 * The **unplan** transition (see task-transitions.ts): the occurrences of
 * schedules `names` planned ahead, pending, not due by `now` and never
 * started, deleted in one statement. The caller holds the schedules' rows
 * (FOR UPDATE, in its transaction) and runs this as a statement of its own,
 * so its snapshot includes whatever a planner committed before the lock was
 * granted. A wheel still holding one finds no row when it fires, and lets it
 * go. Returns each schedule's earliest occurrence unplanned.
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

/**
 * The **withdraw** transition, as a part of the claim statement: every row
 * of CTE `due` with a `withdrawn` reason (occurrenceVerdict, above)
 * is cancelled, not run, that reason its `last_error`. `now` is the claim
 * statement's parameter for the time.
 */
export const withdrawOccurrences = (due: string, now: string) => `UPDATE delayed_task t
       SET cancelled_at = ${now}, last_error = d.withdrawn, locked_by = NULL, updated_at = ${now}
       FROM ${due} d WHERE t.id = d.id AND d.withdrawn IS NOT NULL
       RETURNING t.id, t.schedule_name, d.withdrawn AS reason`;
