import type { Sql } from '../store/sql.js';
import { PENDING } from './pending.js';

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

/** **withdraw**, a CTE of the claim statement: each row of `due` with a `withdrawn` reason (occurrence-verdict.ts) is cancelled with it as `last_error`. */
export const withdrawOccurrences = (due: string, now: string) => `UPDATE delayed_task t
       SET cancelled_at = ${now}, last_error = d.withdrawn, locked_by = NULL, updated_at = ${now}
       FROM ${due} d WHERE t.id = d.id AND d.withdrawn IS NOT NULL
       RETURNING t.id, t.schedule_name, d.withdrawn AS reason`;
