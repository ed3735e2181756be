import type { DelayRuntime } from '../runtime/delay.runtime.js';
import type { ExecutionCounts, TypeCounts } from '../claim/claim-runner.js';
import type { ManualClock } from './manual-clock.js';
import { busiestSchedules, nextDueInstant, waitingTypes } from './walk-statements.js';
import { runawayAdvance } from './tester.messages.js';

/** Stops an `advance` may make (two an occurrence: its plan and its run): 48 hours of a 10-minute schedule fit, a runaway throws. */
export const DEFAULT_MAX_STEPS = 1000;

/** What ran during an `advance` or `runDue`, in this instance. */
export interface RunReport extends TypeCounts {
  byType: Record<string, TypeCounts>;
}

/**
 * Moves `clock` to `target` as time passes in a running app: it stops at each
 * instant something falls due, runs it and settles, then looks for the next.
 * Throws after `maxSteps` stops, leaving the clock where it stopped.
 */
export async function walkTo(
  runtime: DelayRuntime,
  clock: ManualClock,
  target: number,
  maxSteps: number,
  call: string,
): Promise<RunReport> {
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 1)
    throw new RangeError(`${call}: maxSteps must be a positive integer; got ${String(maxSteps)}`);
  const { pool } = runtime.ctx.db;
  const { windowMs } = runtime.ctx.options;
  const start = clock.now();
  const before = runtime.dispatcher.stats.snapshot();
  await runtime.settle();
  for (let steps = 0; ; steps++) {
    const now = clock.now();
    const found = await nextDueInstant(
      pool,
      new Date(now),
      new Date(target),
      windowMs,
      runtime.ctx.policy.handledTypes,
    );
    if (found === null) break;
    if (steps === maxSteps) {
      const ran = difference(runtime.dispatcher.stats.snapshot(), before);
      const span = [pool, new Date(start), new Date(now)] as const;
      const [schedules, waiting] = await Promise.all([
        busiestSchedules(...span),
        waitingTypes(...span),
      ]);
      throw new Error(
        runawayAdvance({ call, maxSteps, start, now, target, ran, schedules, waiting }),
      );
    }
    // A due time written by SQL may carry microseconds: never stop before it.
    clock.set(Math.max(now, Math.ceil(found)));
    await runtime.settle();
  }
  if (clock.now() < target) {
    clock.set(target);
    await runtime.settle();
  }
  return difference(runtime.dispatcher.stats.snapshot(), before);
}

/** What ran between two snapshots of the dispatcher's counts. */
export function difference(after: ExecutionCounts, before: ExecutionCounts): RunReport {
  const sub = (a: TypeCounts, b: TypeCounts | undefined): TypeCounts => ({
    executed: a.executed - (b?.executed ?? 0),
    failed: a.failed - (b?.failed ?? 0),
    deadLettered: a.deadLettered - (b?.deadLettered ?? 0),
    snoozed: a.snoozed - (b?.snoozed ?? 0),
    skipped: a.skipped - (b?.skipped ?? 0),
  });
  const byType: Record<string, TypeCounts> = {};
  for (const [type, counts] of Object.entries(after.byType)) {
    const delta = sub(counts, before.byType[type]);
    if (delta.executed || delta.failed || delta.deadLettered || delta.snoozed || delta.skipped)
      byType[type] = delta;
  }
  return { ...sub(after, before), byType };
}
