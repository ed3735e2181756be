import type { Sql } from '../store/sql.js';

/**
 * A test's clean slate: every task (one-off and planned occurrences), attempt
 * note, schedule and missed occurrence, and the rows of instances other than
 * `instanceId` (a crashed earlier run's). This instance's row and its
 * schedule declarations stay: its lease and planner go on using them. No
 * CASCADE: a table of the app's that references delayed_task makes the
 * statement fail instead of being emptied with it.
 */
export async function deleteEngineState(sql: Sql, instanceId: string): Promise<void> {
  await sql.rows(`TRUNCATE delayed_task, delay_attempt, delay_schedule, delay_schedule_missed`, []);
  await sql.rows(`DELETE FROM delay_schedule_declaration WHERE instance_id <> $1`, [instanceId]);
  await sql.rows(`DELETE FROM delay_instance WHERE id <> $1`, [instanceId]);
}
