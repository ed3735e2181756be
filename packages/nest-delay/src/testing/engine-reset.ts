import type { DelayRuntime } from '../runtime/delay.runtime.js';
import type { ScheduleRegistry } from '../schedules/schedule-registry.js';
import { upsertSchedule } from '../schedules/schedule-statements.js';
import { deleteEngineState } from './reset-statements.js';

/**
 * DelayTester.reset's work, on a running module: empties the wheel, the
 * dispatcher's queue and the limit gate, and the module's tables
 * (deleteEngineState), then writes the declared schedules again with their
 * first occurrence after `nowMs`, so the reset itself runs nothing. The
 * clock is not touched.
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
