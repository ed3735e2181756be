import type { Sql } from '../store/sql.js';

/**
 * A test's clean slate, table by table (every table of the package's
 * migrations):
 * - emptied: `delayed_task` (one-off tasks and planned occurrences, with
 *   their fates), `delay_task_event` (the entities' timelines),
 *   `delay_attempt` (attempt notes), `delay_schedule` and
 *   `delay_schedule_missed` (schedules, their pauses and missed counts;
 *   the declared ones are written again), `delay_limit_credit` (the rate
 *   limits' ledgers: a start of an earlier test would hold up this one's);
 * - `delay_type_limit`: what was set at run time goes (pauses, limits set
 *   in place of the declared ones); what the handlers declare in code,
 *   stored at boot, stays;
 * - `delay_schedule_declaration`, `delay_instance`: the rows of instances
 *   other than `instanceId` go (a crashed earlier run's); this instance's
 *   stay, its lease and planner go on using them.
 * Ids go on from where they were: an id an app's table kept from an earlier
 * test never names a task of this one. No CASCADE: a table of the app's that
 * references delayed_task makes the statement fail instead of being emptied
 * with it.
 */
export async function deleteEngineState(sql: Sql, instanceId: string, now: Date): Promise<void> {
  await sql.rows(
    `TRUNCATE delayed_task, delay_task_event, delay_attempt, delay_schedule,
       delay_schedule_missed, delay_limit_credit`,
    [],
  );
  await sql.rows(`DELETE FROM delay_type_limit WHERE declared_at IS NULL`, []);
  await sql.rows(
    `UPDATE delay_type_limit
     SET paused_at = NULL, overridden = false, concurrency = NULL,
         rate_starts = NULL, rate_per_ms = NULL, updated_at = $1
     WHERE paused_at IS NOT NULL OR overridden`,
    [now],
  );
  await sql.rows(`DELETE FROM delay_schedule_declaration WHERE instance_id <> $1`, [instanceId]);
  await sql.rows(`DELETE FROM delay_instance WHERE id <> $1`, [instanceId]);
}
