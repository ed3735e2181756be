import type { DelayRuntime } from '../runtime/delay.runtime.js';
import type { ScheduleRegistry } from '../schedules/schedule-registry.js';
import { upsertSchedule } from '../schedules/schedule-statements.js';
import type { Sql } from '../store/sql.js';

/**
 * DelayTester.reset on a running module: empties memory and the tables, then
 * writes the declared schedules again with their first occurrence after
 * `nowMs`, so the reset itself runs nothing.
 */
export async function resetEngine(
  runtime: DelayRuntime,
  declared: ReturnType<ScheduleRegistry['all']>,
  nowMs: number,
): Promise<void> {
  const { db, options } = runtime.ctx;
  // The wheel's stop empties it, so nothing held fires a task that is gone.
  await runtime.wheel.stop();
  try {
    await db.transaction((sql) => deleteEngineState(sql, options.instanceId, new Date(nowMs)));
    runtime.tablesEmptied++;
    // What waits in memory is of tasks just deleted, under limits just cleared.
    await runtime.dispatcher.forgetWaiting();
    for (const { spec, recurrence } of declared) {
      const first = recurrence.next(nowMs);
      await upsertSchedule(db, spec, first === undefined ? null : new Date(first), new Date(nowMs));
    }
  } finally {
    await runtime.wheel.start();
  }
}

/**
 * A test's clean slate: every table of the package's migrations emptied,
 * except what code declared (limits stored at boot) and this instance's own
 * lease and declarations. Ids go on from where they were, so an id an app
 * kept from an earlier test never names a task of this one. No CASCADE: an
 * app's table referencing delayed_task makes it fail rather than be emptied.
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
