import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { CLOCK, DatabaseClock, SystemClock, type Clock } from '../clock/index.js';
import { errorText, migrationsBehind, missingTables, noShutdownHooks } from '../delay.messages.js';
import { delayMigrations } from '../migrations/index.js';
import type { ResolvedDelayOptions } from '../delay.options.js';
import { DELAY_DATABASE, DELAY_OPTIONS, DELAY_TRACING } from '../delay.tokens.js';
import { HandlerRegistry } from '../handler-registry.js';
import { AfterCommit } from '../observer/after-commit.js';
import { ObserverCalls } from '../observer/observer-calls.js';
import { databaseNowMs } from '../lease/lease-statements.js';
import { Database } from '../store/sql.js';
import type { TaskTracing } from '../tracing/task-tracing.js';
import { BacklogDrainer } from '../lease/backlog-drainer.js';
import type { DelayContext } from '../context/delay-context.js';
import { Dispatcher } from '../claim/dispatcher.js';
import { InstanceLease } from '../lease/instance-lease.js';
import { Pruner } from '../retention/pruner.js';
import { SchedulePlanner } from '../schedules/schedule-planner.js';
import { ScheduleRegistry } from '../schedules/schedule-registry.js';
import { TaskWheel } from '../firing/task-wheel.js';
import { WindowLoader } from '../lease/window-loader.js';
import { StrandedSweep } from '../lease/stranded-sweep.js';
import { WindowPolicy } from '../tasks/window-policy.js';
import { clockMessage, sampleDatabaseClock } from '../lease/clock-watch.js';
import { WritesInFlight } from './writes-in-flight.js';
import { SHUTDOWN_HOOKS_CHECK_MS, START_CLOCK_SAMPLES } from '../context/tuning.js';

/**
 * The services behind DelayService, started at application bootstrap (after
 * every handler was discovered) and stopped before TypeORM closes its pool.
 * Start order: the lease first, so nothing is leased without it; stop order:
 * firing first and the lease last, so nothing runs without it.
 */
@Injectable()
export class DelayRuntime
  implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown
{
  readonly ctx: DelayContext;
  readonly wheel: TaskWheel;
  readonly dispatcher: Dispatcher;
  readonly backlog: BacklogDrainer;
  readonly loader: WindowLoader;
  readonly sweep: StrandedSweep;
  readonly lease: InstanceLease;
  readonly pruner: Pruner;
  readonly planner: SchedulePlanner;
  readonly writes = new WritesInFlight();
  /** Times DelayTester.reset emptied the tables: what caches their contents reads them again. */
  tablesEmptied = 0;
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private hooksCheck: NodeJS.Timeout | undefined;

  constructor(
    @Inject(DELAY_OPTIONS) options: ResolvedDelayOptions,
    @Inject(DELAY_DATABASE) database: Database,
    @Inject(CLOCK) clock: Clock | undefined,
    @Inject(DELAY_TRACING) tracing: TaskTracing | null,
    private readonly registry: HandlerRegistry,
    schedules: ScheduleRegistry,
  ) {
    const logger = new Logger('DelayModule');
    // By default claims take at most half the pool: the app's requests always find connections.
    const { poolSize } = database;
    if (options.concurrency !== undefined && options.concurrency >= poolSize)
      logger.warn(
        `concurrency ${options.concurrency} lets claims hold all ${poolSize} connections of the pool: the app's requests wait behind a backlog; at most ${Math.max(1, poolSize - 2)} leaves it some (default: half the pool)`,
      );
    this.ctx = {
      clock: clock ?? new DatabaseClock(new SystemClock()),
      options,
      concurrency: options.concurrency ?? Math.max(1, Math.min(10, Math.floor(poolSize / 2))),
      logger,
      db: database,
      policy: new WindowPolicy(options),
      observer: new ObserverCalls(options.observer, logger),
      afterCommit: new AfterCommit(database.dataSource),
      tracing: tracing ?? undefined,
    };
    // The wheel's output is the dispatcher's input; read when a tick fires, after both exist.
    this.wheel = new TaskWheel(this.ctx, (tasks) => this.dispatcher.fire(tasks));
    this.dispatcher = new Dispatcher(this.ctx, registry, this.wheel);
    this.backlog = new BacklogDrainer(this.ctx, this.dispatcher);
    this.sweep = new StrandedSweep(this.ctx, this.wheel, this.dispatcher);
    this.loader = new WindowLoader(this.ctx, this.wheel, this.backlog, this.sweep);
    this.lease = new InstanceLease(this.ctx, this.backlog, this.loader);
    this.pruner = new Pruner(this.ctx);
    this.planner = new SchedulePlanner(this.ctx, registry, schedules, this.loader);
  }

  get running(): boolean {
    return this.state === 'running';
  }

  async onApplicationBootstrap(): Promise<void> {
    this.ctx.db.guardConnections();
    await this.reportClock();
    this.ctx.policy.setHandledTypes(this.registry.types());
    this.ctx.policy.setRunning(true);
    // Callers' commits: an observer hears of their writes, and holds follow them, only then.
    this.ctx.afterCommit.attach();
    this.state = 'running';
    try {
      await this.lease.start();
      await this.dispatcher.start();
      await this.backlog.start();
      await this.loader.start();
      await this.planner.start();
    } catch (error) {
      throw (await schemaError(error, this.ctx.db)) ?? error;
    }
    await this.wheel.start();
    await this.pruner.start();
    // A moment later: an application context is initialised before its creator can call enableShutdownHooks().
    this.hooksCheck = setTimeout(() => {
      if (shutdownHooksMissing(process.listenerCount('SIGTERM'), process.env))
        this.ctx.logger.warn(noShutdownHooks());
    }, SHUTDOWN_HOOKS_CHECK_MS);
    this.hooksCheck.unref();
    this.ctx.logger.log(
      `Instance ${this.ctx.options.instanceId} started: ${this.wheel.size} task(s) due within ${this.ctx.options.windowMs} ms held` +
        `${this.loader.busy ? ' so far, more loading' : ''}, handlers: ${this.registry.types().join(', ') || 'none'}`,
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  /** After the stop: the engine's own pool, if it opened one, is ended (the app's it leaves). */
  async onApplicationShutdown(): Promise<void> {
    await this.ctx.db.close();
  }

  /**
   * Stops firing, lets handlers in flight finish (within shutdownTimeout) and
   * hands the tasks back for others to take at once; `keepLease` leaves them
   * leased, as a crash would (for tests).
   */
  async stop({ keepLease = false } = {}): Promise<void> {
    if (this.state === 'stopping' || this.state === 'stopped') return;
    if (this.state === 'new') {
      this.state = 'stopped';
      return;
    }
    this.state = 'stopping';
    clearTimeout(this.hooksCheck);
    this.ctx.policy.setRunning(false);
    await this.pruner.stop();
    await this.planner.stop();
    await this.wheel.stop();
    await this.loader.stop();
    await this.dispatcher.stop();
    await this.backlog.stop();
    // A write that leased a task here while running commits before the hand-back, not after it.
    const { shutdownTimeoutMs } = this.ctx.options;
    if (!(await this.writes.settled(shutdownTimeoutMs)))
      this.ctx.logger.warn(
        `${this.writes.size} scheduling call(s) still under way after ${shutdownTimeoutMs} ms; a task they lease here is released by another instance's sweep for missing instances`,
      );
    if (keepLease) this.lease.keepLeaseAtStop();
    await this.lease.stop();
    this.ctx.afterCommit.detach();
    this.state = 'stopped';
  }

  /** Runs everything due by the clock's now and resolves when nothing is due, queued or in flight; waits on state, never on time. */
  async settle(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    // Occurrences due by now are planned first (the planner's own timer may not have run).
    if (this.running) await this.planner.runNow();
    for (;;) {
      if (!this.running) return;
      const fired = this.wheel.turnNow();
      if (
        fired === 0 &&
        !this.loader.busy &&
        !this.backlog.busy &&
        !this.planner.busy &&
        // A beat the clock's move started: its timer re-arms when it ends, so a
        // test stepping a ManualClock by a heartbeat must not move on before it.
        !this.lease.busy &&
        !this.dispatcher.gate.busy &&
        !this.dispatcher.stamping &&
        this.dispatcher.idle
      )
        return;
      if (Date.now() > deadline) {
        throw new Error(
          `DelayModule did not settle within ${timeoutMs} ms (${this.dispatcher.queuedCount} queued)`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  /** Logs how far the system clock is from the database's; a test's own clock is only reported, never corrected. */
  private async reportClock(): Promise<void> {
    const { clock, db, logger } = this.ctx;
    try {
      if (clock instanceof DatabaseClock) {
        if (!clock.measured) await sampleDatabaseClock(clock, db, START_CLOCK_SAMPLES);
        logger.log(clockMessage(clock));
        return;
      }
      const before = clock.now();
      const databaseMs = await databaseNowMs(db.pool);
      const offset = databaseMs - (before + clock.now()) / 2;
      logger.log(
        `Database clock minus the module's clock: ${Math.round(offset)} ms (a clock of its own: not corrected)`,
      );
    } catch (error) {
      throw new Error(`DelayModule cannot reach its database: ${errorText(error)}`, {
        cause: error,
      });
    }
  }
}

/** A clear error for a schema the package's migrations have not (all) been run on, naming the missing ones. */
async function schemaError(error: unknown, db: Database): Promise<Error | undefined> {
  const e = error as { code?: string; driverError?: { code?: string }; message?: string };
  const code = e?.code ?? e?.driverError?.code;
  // 42P01: undefined_table; 42703: undefined_column.
  if (code !== '42P01' && code !== '42703') return undefined;
  const detail = e.message ?? 'undefined table or column';
  const missing = await missingMigrations(db).catch(() => undefined);
  if (missing && missing.length > 0 && missing.length < delayMigrations.length)
    return new Error(migrationsBehind(detail, missing), { cause: error });
  return new Error(missingTables(detail), { cause: error });
}

/**
 * The package's migrations that the DataSource's migrations table does not
 * list; undefined when there is no such table (a schema applied otherwise).
 */
async function missingMigrations(db: Database): Promise<string[] | undefined> {
  const table = db.dataSource
    ? (db.dataSource.options.migrationsTableName ?? 'migrations')
    : 'delay_migrations';
  const [found] = await db.pool.rows<{ name: string | null }>(
    `SELECT to_regclass($1)::text AS name`,
    [table],
  );
  if (!found?.name) return undefined;
  // Quoted by Postgres itself (regclass's text form).
  const ran = await db.pool.rows<{ name: string }>(`SELECT name FROM ${found.name}`, []);
  const names = new Set(ran.map((row) => row.name));
  return delayMigrations.map((m) => m.name).filter((name) => !names.has(name));
}

/**
 * Without `app.enableShutdownHooks()` (or the app's own signal handling), a
 * SIGTERM skips the stop: the tasks stay leased until the lease expires. Nest
 * tells a module nothing of hooks; a SIGTERM listener is the sign. Test
 * runners boot without hooks on purpose, so they are not warned.
 */
export function shutdownHooksMissing(
  sigtermListeners: number,
  env: Record<string, string | undefined>,
): boolean {
  const underTestRunner =
    env.JEST_WORKER_ID !== undefined || env.VITEST !== undefined || env.NODE_ENV === 'test';
  return sigtermListeners === 0 && !underTestRunner;
}
