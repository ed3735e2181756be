import type { INestApplicationContext } from '@nestjs/common';
import type { TestingModuleBuilder } from '@nestjs/testing';
import { CLOCK, type Clock } from '../clock/index.js';
import { DelayService } from '../delay.service.js';
import { parseDuration, type Duration } from '../duration.js';
import { HandlerRegistry } from '../handler-registry.js';
import { DelayRuntime } from '../runtime/delay.runtime.js';
import type { ExecutionCounts, TypeCounts } from '../claim/claim-outcomes.js';
import { findTasks, type TaskFilter } from '../tasks/task-statements.js';
import { nextScheduleEvent } from '../schedules/recurring-statements.js';
import { DelaySchedules } from '../schedules/delay-schedules.service.js';
import { ScheduleRegistry } from '../schedules/schedule-registry.js';
import { toTask } from '../tasks/task-row.js';
import { TaskOutcome } from '../task-outcome.js';
import type { DelayedTask, JsonValue, TaskId } from '../task.types.js';
import { ManualClock } from './manual-clock.js';
import { resetEngine } from './engine-reset.js';

/** What ran during an `advance` or `runDue`, in this instance. */
export interface RunReport extends TypeCounts {
  byType: Record<string, TypeCounts>;
}

/** Tasks to look for: every field narrows. `runAt` matches the due time exactly. */
export interface ScheduledFilter extends Omit<TaskFilter, 'state'> {
  runAt?: Date | number;
}

/** How `advance` and `advanceTo` treat recurring schedules. */
export interface AdvanceOptions {
  /**
   * `true` (default): every occurrence in the span runs, one after another.
   * `false`: the schedules are left out of this move, as if paused for its
   * span: none of their occurrences runs, only one-off tasks (and retries).
   * They are resumed at the end; what they missed then follows each one's
   * catch-up policy at the next `advance` or `runDue` that includes them.
   */
  schedules?: boolean;
}

/** What a handler did when run by `perform`. */
export type PerformResult =
  | { outcome: 'executed' }
  | { outcome: 'discarded'; reason: string }
  | { outcome: 'snoozed'; snoozeMs: number };

/** Swaps the module's clock for a ManualClock: `useManualClock(Test.createTestingModule(...))`. */
export function useManualClock(
  builder: TestingModuleBuilder,
  clock: ManualClock = new ManualClock(),
): TestingModuleBuilder {
  return builder.overrideProvider(CLOCK).useValue(clock);
}

/**
 * Drives and inspects the delay module of a Nest app under test, as
 * Oban.Testing and rivertest do: move time and see what ran, assert what is
 * scheduled, run one handler on a payload. Get one with
 * `DelayTester.for(app)` after `app.init()`; the app's clock must be a
 * ManualClock (see useManualClock) for `advance`.
 */
export class DelayTester {
  private constructor(
    private readonly runtime: DelayRuntime,
    private readonly registry: HandlerRegistry,
    readonly delay: DelayService,
    private readonly anyClock: Clock,
    private readonly schedules: DelaySchedules,
    private readonly declared: ScheduleRegistry,
  ) {}

  static for(app: INestApplicationContext): DelayTester {
    const get = <T>(token: unknown): T => app.get(token as never, { strict: false });
    return new DelayTester(
      get(DelayRuntime),
      get(HandlerRegistry),
      get(DelayService),
      get<Clock>(CLOCK),
      get(DelaySchedules),
      get(ScheduleRegistry),
    );
  }

  /** The app's ManualClock; throws if the app runs on another clock. */
  get clock(): ManualClock {
    if (!(this.anyClock instanceof ManualClock)) {
      throw new Error(
        'DelayTester needs the app to run on a ManualClock: build the testing module with useManualClock(builder)',
      );
    }
    return this.anyClock;
  }

  /**
   * Moves time forward by `by` and runs everything that fell due; reports
   * what ran. Recurring schedules are planned on the way, a window ahead of
   * each occurrence as a running app plans them, so each occurrence in the
   * span runs once (a jump does not count as downtime for catch-up).
   * `{ schedules: false }` leaves them out: one-off tasks only.
   */
  advance(by: Duration, options: AdvanceOptions = {}): Promise<RunReport> {
    return this.advanceTo(this.clock.now() + parseDuration(by, 'advance'), options);
  }

  /** Moves time to `at` (never backwards) and runs everything due by then, as `advance` does. */
  async advanceTo(at: Date | number, options: AdvanceOptions = {}): Promise<RunReport> {
    const target = typeof at === 'number' ? at : at.getTime();
    if (options.schedules === false) return this.withoutSchedules(() => this.jumpTo(target));
    const before = this.runtime.dispatcher.stats.snapshot();
    const { windowMs } = this.runtime.ctx.options;
    const { pool } = this.runtime.ctx.db;
    // Stop at each moment something happens to a schedule (an occurrence
    // falls due, or comes within the window and is planned), as time would
    // pass in a running app: occurrences run one after another, not all at once.
    let last: number | undefined;
    for (;;) {
      const next = await nextScheduleEvent(pool, new Date(this.clock.now()), windowMs);
      // The same event again: settling it changed nothing (it cannot be planned), go on.
      if (next === null || next > target || next === last) break;
      last = next;
      this.clock.set(Math.max(this.clock.now(), next));
      await this.runtime.settle();
    }
    this.clock.set(target);
    await this.runtime.settle();
    return difference(this.runtime.dispatcher.stats.snapshot(), before);
  }

  /** One step to `target`: what a schedule would do on the way is not looked at. */
  private async jumpTo(target: number): Promise<RunReport> {
    const before = this.runtime.dispatcher.stats.snapshot();
    this.clock.set(Math.max(this.clock.now(), target));
    await this.runtime.settle();
    return difference(this.runtime.dispatcher.stats.snapshot(), before);
  }

  /**
   * Pauses every running schedule (withdrawing what was planned ahead, as
   * DelaySchedules.pause does everywhere), runs `fn`, then resumes them, even
   * when `fn` throws. Those already paused stay paused.
   */
  private async withoutSchedules<T>(fn: () => Promise<T>): Promise<T> {
    const running = (await this.schedules.list()).filter((s) => !s.paused).map((s) => s.name);
    for (const name of running) await this.schedules.pause(name);
    try {
      return await fn();
    } finally {
      for (const name of running) await this.schedules.resume(name);
    }
  }

  /**
   * Starts a test from a clean engine: deletes every task (one-off and
   * planned occurrences), attempt note and schedule in the module's tables on
   * its database, and what this instance holds in memory, then writes the
   * app's @RecurringTask schedules again, their first occurrence after the
   * clock's now. Schedules added at run time are gone; limits set at run
   * time stay (DelayLimits.reset).
   * For a test's own database only: it refuses unless the app runs on a
   * ManualClock (useManualClock), and is meant for a beforeEach, when
   * nothing runs.
   */
  async reset(): Promise<void> {
    if (!(this.anyClock instanceof ManualClock)) {
      throw new Error(
        "DelayTester.reset() deletes every task and schedule in the module's tables: it runs only in an app " +
          'built with useManualClock(builder), the mark of a test. This app runs on another clock.',
      );
    }
    await resetEngine(this.runtime, this.declared.all(), this.anyClock.now());
    await this.runtime.settle();
  }

  /** Runs everything due by now (and whatever falls due while it runs); reports what ran. */
  async runDue(): Promise<RunReport> {
    const before = this.runtime.dispatcher.stats.snapshot();
    await this.runtime.settle();
    return difference(this.runtime.dispatcher.stats.snapshot(), before);
  }

  /** Pending tasks matching `filter`, in due order (at most 1,000). */
  async scheduled<P = JsonValue>(filter: ScheduledFilter = {}): Promise<DelayedTask<P>[]> {
    const { runAt, ...rest } = filter;
    const at = runAt === undefined ? undefined : new Date(runAt);
    const rows = await findTasks(
      this.runtime.ctx.db.pool,
      {
        ...rest,
        state: 'pending',
        dueFrom: at ?? rest.dueFrom,
        dueBefore: at ? new Date(at.getTime() + 1) : rest.dueBefore,
      },
      1000,
    );
    return rows.map((row) => toTask<P>(row));
  }

  /** Asserts exactly one pending task matches; returns it. The error lists what is pending instead. */
  async assertScheduled<P = JsonValue>(filter: ScheduledFilter): Promise<DelayedTask<P>> {
    const found = await this.scheduled<P>(filter);
    if (found.length === 1) return found[0];
    const near = found.length > 1 ? found : await this.scheduled({ type: filter.type });
    throw new Error(
      `Expected one pending delayed task matching ${describe(filter)}, found ${found.length}. ` +
        `Pending${found.length > 1 ? ' matches' : filter.type ? ` of type ${filter.type}` : ''}: ${listing(near)}`,
    );
  }

  /** Asserts no pending task matches. */
  async assertNotScheduled(filter: ScheduledFilter): Promise<void> {
    const found = await this.scheduled(filter);
    if (found.length === 0) return;
    throw new Error(
      `Expected no pending delayed task matching ${describe(filter)}, found ${found.length}: ${listing(found)}`,
    );
  }

  /**
   * Runs the handler of `type` on `payload` in a transaction of its own, as a
   * claim would (no task row needed), and commits its writes. A handler that
   * throws rolls back and the error propagates.
   */
  async perform(type: string, payload: unknown = null): Promise<PerformResult> {
    const handler = this.registry.get(type);
    if (!handler) {
      throw new Error(
        `No handler for delayed task type "${type}" (known: ${this.registry.types().join(', ') || 'none'})`,
      );
    }
    const now = new Date(this.anyClock.now());
    const returned = await this.runtime.ctx.db.dataSource.transaction(async (manager) =>
      handler.fn(payload, {
        task: {
          id: '0',
          type,
          key: null,
          entity: null,
          payload: payload as JsonValue,
          dueAt: now,
          state: 'executed',
          executedAt: now,
          cancelledAt: null,
          deadAt: null,
          attempts: 1,
          maxAttempts: handler.maxAttempts,
          lastError: null,
          lockedBy: this.runtime.ctx.options.instanceId,
          createdAt: now,
          updatedAt: now,
        },
        manager,
        attempt: 1,
        instanceId: this.runtime.ctx.options.instanceId,
        signal: new AbortController().signal,
      }),
    );
    if (!(returned instanceof TaskOutcome)) return { outcome: 'executed' };
    if (returned.kind === 'discard') return { outcome: 'discarded', reason: returned.reason ?? '' };
    return { outcome: 'snoozed', snoozeMs: returned.snoozeMs };
  }

  /** Renews the lease and loads the window now, instead of at the next heartbeat. */
  async refresh(): Promise<void> {
    await this.runtime.lease.renew();
    await this.runtime.loader.refresh();
  }

  /** Runs a pruning round now (retention by the app's clock); resolves with how many tasks it deleted. */
  prune(): Promise<number> {
    return this.runtime.pruner.runNow();
  }

  /** Tasks this instance holds in its wheel. */
  get held(): number {
    return this.runtime.wheel.size;
  }

  isHeld(id: TaskId): boolean {
    return this.runtime.wheel.has(id);
  }

  /**
   * Stops this instance the way a killed process stops: nothing more runs and
   * its leases stay until they expire, for tests of what other instances do.
   */
  crash(): Promise<void> {
    return this.runtime.stop({ keepLease: true });
  }
}

function difference(after: ExecutionCounts, before: ExecutionCounts): RunReport {
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

function describe(filter: ScheduledFilter): string {
  return JSON.stringify(filter, (_key, value: unknown) =>
    typeof value === 'number' && _key === 'runAt' ? new Date(value).toISOString() : value,
  );
}

function listing(tasks: DelayedTask<unknown>[]): string {
  if (tasks.length === 0) return 'none';
  const shown = tasks
    .slice(0, 10)
    .map(
      (t) =>
        `#${t.id} ${t.type} key=${t.key ?? '-'} at ${t.dueAt.toISOString()} payload=${JSON.stringify(t.payload)}`,
    );
  return shown.join('; ') + (tasks.length > 10 ? `; and ${tasks.length - 10} more` : '');
}
