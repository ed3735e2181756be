import type { EntityManager } from 'typeorm';
import type { DelayContext } from '../context/delay-context.js';
import type { TaskId } from '../task.types.js';
import { stateOf, type TaskRow } from '../tasks/task-row.js';
import type { Fate } from '../tasks/task-transitions.js';
import type { TaskWheel } from './task-wheel.js';

/**
 * Which tasks this instance's wheel holds, and until when: every rule that
 * follows a write, a fate or a cancel, in one file (the loader, the stranded
 * sweep and a claim's retries hold what they leased, at its due time). Every
 * hold names the task's type, which the rows read here all carry: the
 * dispatcher sends a fired task of a limited type to the gate by it.
 *
 * The wheel holds a pending task of a type handled here, due within the
 * window, while it is leased here. One exception: a task written in a
 * caller's transaction is unleased until that commits, so it is held early,
 * never later than its due time, and again at the commit (a hold that fired
 * before the commit found no row, and its claim let it go). Anything else is
 * let go: its lease, if any, says who runs it. Holding a task not ours is
 * harmless (its claim finds it leased elsewhere); dropping one that is ours
 * leaves it held nowhere: no loader takes a leased task, only the safety net
 * (lease/stranded-sweep.ts) or a takeover.
 *
 * The invariant that keeps (issue 45): a pending task leased to a running
 * instance is in its wheel, its claim queue, a claim of its, or its limit
 * gate. So a lease is written only where a hold follows: never for a type
 * with no handler here (the statements that read the type lease only
 * handled ones); never by a write that commits after this instance handed
 * its tasks back (its stop waits for the writes under way); and a claim's
 * fate never lets go of an entry a newer write put back (followFate).
 */
type Holds = Pick<DelayContext, 'policy' | 'clock' | 'afterCommit'>;

/** A row DelayService just wrote or found (schedule, reschedule, revive). */
export function followWrite(
  wheel: TaskWheel,
  ctx: Holds,
  row: TaskRow,
  manager: EntityManager | undefined,
): void {
  const { policy } = ctx;
  if (stateOf(row) !== 'pending') return;
  // Another instance's to run (see WindowPolicy.handles).
  if (!policy.handles(row.type)) return wheel.drop(row.id);
  const dueAtMs = row.due_at.getTime();
  if (manager) holdUncommitted(wheel, ctx, manager, row.id, dueAtMs, row.type);
  else if (policy.holds(row.locked_by)) wheel.hold(row.id, dueAtMs, row.type);
  else if (row.locked_by !== null) wheel.drop(row.id);
  // Unleased and committed: a hold it has (an earlier caller's write) moves with it.
  else if (wheel.has(row.id)) wheel.hold(row.id, dueAtMs, row.type);
}

/**
 * Rows scheduleMany inserted, leased by its statement whatever their type:
 * one of a type not handled here is held all the same, and its claim hands
 * the lease back (the claim's `unhandled` verdict).
 */
export function followBulkWrite(
  wheel: TaskWheel,
  ctx: Holds,
  rows: readonly { id: TaskId; due_at: Date; locked_by: string | null; type: string }[],
  manager: EntityManager | undefined,
): void {
  for (const row of rows) {
    const dueAtMs = row.due_at.getTime();
    if (manager) holdUncommitted(wheel, ctx, manager, row.id, dueAtMs, row.type);
    else if (ctx.policy.holds(row.locked_by)) wheel.hold(row.id, dueAtMs, row.type);
  }
}

/**
 * A task cancelled. In a caller's transaction the cancel may roll back: the
 * wheel is left alone, and the claim finds the task cancelled (or not).
 */
export function followCancel(
  wheel: TaskWheel,
  id: TaskId,
  manager: EntityManager | undefined,
): void {
  if (!manager) wheel.drop(id);
}

/**
 * A claim's fate: a task pending again and leased here is held here. Nothing
 * is let go: the task left the wheel when it fired, so an entry found now
 * was put back while its claim ran, by a write of this instance at least as
 * new as the fate (a revive or reschedule that waited for the claim's lock,
 * its reply read first). Letting go of it left the task leased here and held
 * nowhere (issue 45); keeping one that is stale costs a claim that finds it
 * done or moved, which holds it again where it now is.
 */
export function followFate(wheel: TaskWheel, ctx: Pick<Holds, 'policy'>, fate: Fate): void {
  const pendingAgain = fate.transition === 'retry' || fate.transition === 'snooze';
  if (pendingAgain && ctx.policy.holds(fate.lockedBy))
    wheel.hold(fate.row.id, fate.dueAtMs, fate.row.type);
}

/**
 * A write in the caller's transaction: held now, no later than its due time
 * (fired early, the claim sorts it out), and again when it commits. A
 * transaction TypeORM does not report (a raw BEGIN) still has the loader's round.
 */
function holdUncommitted(
  wheel: TaskWheel,
  { policy, clock, afterCommit }: Holds,
  manager: EntityManager,
  id: TaskId,
  dueAtMs: number,
  type: string,
): void {
  const holdIfRunning = () => {
    if (policy.isRunning && policy.isWithinWindow(dueAtMs, clock.now()))
      wheel.holdNoLaterThan(id, dueAtMs, type);
  };
  holdIfRunning();
  afterCommit.run(manager, holdIfRunning);
}
