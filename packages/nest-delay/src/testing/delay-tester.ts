import type { INestApplicationContext } from '@nestjs/common';
import { noManager } from '../delay.messages.js';
import type { TestingModuleBuilder } from '@nestjs/testing';
import { CLOCK, type Clock } from '../clock/index.js';
import { DelayService } from '../delay.service.js';
import { parseDuration, type Duration } from '../duration.js';
import { HandlerRegistry } from '../handler-registry.js';
import { DelayRuntime } from '../runtime/delay.runtime.js';
import { findTasks, type TaskFilter } from '../tasks/task-statements.js';
import { DelaySchedules } from '../schedules/delay-schedules.service.js';
import { ScheduleRegistry } from '../schedules/schedule-registry.js';
import { toTask } from '../tasks/task-row.js';
import {
  TaskOutcome,
  type ClaimClient,
  type DelayedTask,
  type JsonValue,
  type TaskId,
} from '../task.types.js';
import type { Sql } from '../store/sql.js';
import { upsertSchedule } from '../schedules/schedule-statements.js';
import { ManualClock } from './manual-clock.js';
import { DEFAULT_MAX_STEPS, difference, walkTo, type RunReport } from './time-walk.js';

export type { RunReport } from './time-walk.js';

/** Tasks to look for: every field narrows. `runAt` matches the due time exactly. */
export interface ScheduledFilter extends Omit<TaskFilter, 'state'> {
  runAt?: Date | number;
}

/** How `advance` and `advanceTo` treat recurring schedules, and their cap. */
export interface AdvanceOptions {
  /**
   * `true` (default): every occurrence in the span runs. `false`: the
   * schedules are paused for the move and resumed at its end, and what they
   * missed follows their catch-up policy at the next move that includes them.
   */
  schedules?: boolean;
  /** Instants the move may stop at (default 1,000); beyond, it throws naming what stepped the clock most, rather than outrun the test's timeout. */
  maxSteps?: number;
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
 * Drives and inspects the delay module of a Nest app under test: move time
 * and see what ran, assert what is scheduled, run one handler on a payload.
 * `DelayTester.for(app)` after `app.init()`; `advance` needs useManualClock.
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
   * Moves time forward by `by`, stopping at each instant something falls due
   * and running it there, so each handler sees its own due time, and a retry
   * or snooze within the span runs in it. Reports what ran. More than
   * `maxSteps` stops throw, naming what fired most.
   */
  advance(by: Duration, options: AdvanceOptions = {}): Promise<RunReport> {
    return this.walk(
      this.clock.now() + parseDuration(by, 'advance'),
      options,
      `advance(${JSON.stringify(by)})`,
    );
  }

  /** Moves time to `at` (never backwards), walking the span as `advance` does. */
  advanceTo(at: Date | number, options: AdvanceOptions = {}): Promise<RunReport> {
    const target = typeof at === 'number' ? at : at.getTime();
    return this.walk(target, options, `advanceTo(${new Date(target).toISOString()})`);
  }

  private walk(target: number, options: AdvanceOptions, call: string): Promise<RunReport> {
    const clock = this.clock;
    const { maxSteps = DEFAULT_MAX_STEPS } = options;
    const run = () => walkTo(this.runtime, clock, Math.max(clock.now(), target), maxSteps, call);
    return options.schedules === false ? this.withoutSchedules(run) : run();
  }

  /** Pauses every running schedule (as DelaySchedules.pause), runs `fn`, then resumes them, even when it throws. */
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
   * Starts a test from a clean engine: deletes every task, timeline, attempt
   * note, schedule, rate ledger, run-time limit and pause and other
   * instance's row, and what this instance holds in memory; then writes the
   * app's @RecurringTask schedules again, their first occurrence after now.
   * What the code declares stays, and the clock stays where it is. For a
   * test's own database, in a beforeEach: it refuses without a ManualClock.
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

  /** Runs the handler of `type` on `payload` in a transaction of its own, as a claim would, with no task row; a throw rolls back and propagates. */
  async perform(type: string, payload: unknown = null): Promise<PerformResult> {
    const handler = this.registry.get(type);
    if (!handler) {
      throw new Error(
        `No handler for delayed task type "${type}" (known: ${this.registry.types().join(', ') || 'none'})`,
      );
    }
    const now = new Date(this.anyClock.now());
    const { db } = this.runtime.ctx;
    const returned = await db.transaction(async (sql, { client, manager }) =>
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
        get manager() {
          if (!manager) throw new Error(noManager());
          return manager;
        },
        sql,
        client: client as unknown as ClaimClient,
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

  /** Stops this instance as a killed process stops: its leases stay until they expire. */
  crash(): Promise<void> {
    return this.runtime.stop({ keepLease: true });
  }
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

/**
 * DelayTester.reset on a running module: empties memory and the tables, then
 * writes the declared schedules again with their first occurrence after
 * `nowMs`, so the reset itself runs nothing.
 */
async function resetEngine(
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
async function deleteEngineState(sql: Sql, instanceId: string, now: Date): Promise<void> {
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
