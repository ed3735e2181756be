import type { Sql } from '../store/sql.js';
import { PENDING } from '../tasks/task-sql.js';

/**
 * The next instant in (`now`, `until`] at which a pending task of a handled
 * type falls due or a running schedule's occurrence comes within the window;
 * null if none. What is due by `now` and has not run waits for its own timer.
 */
export async function nextDueInstant(
  sql: Sql,
  now: Date,
  until: Date,
  windowMs: number,
  types: readonly string[],
): Promise<number | null> {
  const [row] = await sql.rows<{ ms: number | null }>(
    `SELECT (extract(epoch FROM least(
       (SELECT min(due_at) FROM delayed_task
        WHERE ${PENDING} AND due_at > $1 AND due_at <= $2 AND type = ANY($4::text[])),
       (SELECT min(plan_at) FROM (
          SELECT next_at - $3 * interval '1 millisecond' + interval '1 millisecond' AS plan_at
          FROM delay_schedule WHERE NOT paused AND plan_retry_at IS NULL) s
        WHERE plan_at > $1 AND plan_at <= $2)
     )) * 1000)::float8 AS ms`,
    [now, until, windowMs, types],
  );
  return row.ms;
}

/** The schedules whose occurrences fell due in [from, to], most first (at most three). */
export function busiestSchedules(
  sql: Sql,
  from: Date,
  to: Date,
): Promise<Array<{ name: string; n: number }>> {
  return sql.rows(
    `SELECT schedule_name AS name, count(*)::int AS n FROM delayed_task
     WHERE schedule_name IS NOT NULL AND due_at >= $1 AND due_at <= $2
     GROUP BY schedule_name ORDER BY n DESC, name LIMIT 3`,
    [from, to],
  );
}

/** The types whose tasks fell due in [from, to] and are still pending (waiting), most first (at most three). */
export function waitingTypes(
  sql: Sql,
  from: Date,
  to: Date,
): Promise<Array<{ type: string; n: number }>> {
  return sql.rows(
    `SELECT type, count(*)::int AS n FROM delayed_task
     WHERE ${PENDING} AND due_at >= $1 AND due_at <= $2
     GROUP BY type ORDER BY n DESC, type LIMIT 3`,
    [from, to],
  );
}
