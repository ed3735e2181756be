import type { DelayRuntime } from '../runtime/delay.runtime.js';
import type { ScheduleRegistry } from '../schedules/schedule-registry.js';
import { upsertSchedule } from '../schedules/schedule-statements.js';
import { deleteEngineState } from './reset-statements.js';

/**
 * DelayTester.reset's work, on a running module: empties the wheel and the
 * module's tables, then writes the declared schedules again with their first
 * occurrence after `nowMs`, so the reset itself runs nothing.
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
    await db.transaction((sql) => deleteEngineState(sql, options.instanceId));
    for (const { spec, recurrence } of declared) {
      const first = recurrence.next(nowMs);
      await upsertSchedule(db, spec, first === undefined ? null : new Date(first), new Date(nowMs));
    }
  } finally {
    await runtime.wheel.start();
  }
}
