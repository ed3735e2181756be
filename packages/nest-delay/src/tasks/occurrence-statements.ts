import type { Sql } from '../store/sql.js';
import { PENDING } from './pending.js';

/**
 * The statements of the transitions of a schedule's planned occurrences
 * (the decisions are in task-transitions.ts; docs/how-it-works.md, "State
 * transitions", has the table).
 */

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
 * of CTE `due` with a `withdrawn` reason (see schedules/occurrence-verdict.ts)
 * is cancelled, not run, that reason its `last_error`. `now` is the claim
 * statement's parameter for the time.
 */
export const withdrawOccurrences = (due: string, now: string) => `UPDATE delayed_task t
       SET cancelled_at = ${now}, last_error = d.withdrawn, locked_by = NULL, updated_at = ${now}
       FROM ${due} d WHERE t.id = d.id AND d.withdrawn IS NOT NULL
       RETURNING t.id, t.schedule_name, d.withdrawn AS reason`;
