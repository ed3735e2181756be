import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CLOCK, SystemClock, type Clock } from './clock/index.js';
import { DELAY_MODULE_OPTIONS } from './delay.module-definition.js';
import {
  resolveDelayOptions,
  type DelayModuleOptions,
  type ResolvedDelayOptions,
} from './delay.options.js';
import { errorText } from './delay.messages.js';
import { HandlerRegistry } from './handler-registry.js';
import { TaskExecutor } from './task-executor.js';
import { TaskStore, type DueRow } from './task-store.js';
import { TickDriver } from './tick-driver.js';
import { TimingWheel } from './wheel/index.js';
import { WindowLoader } from './window-loader.js';
import { DELAY_DATA_SOURCE } from './delay.tokens.js';

/**
 * The moving parts behind DelayService: the wheel (what is due soon, in
 * memory), the tick driver (turns it with the clock), the executor (claims and
 * runs due tasks off the tick path) and the loader (leases and the window).
 * Started at application bootstrap, after every handler was discovered;
 * stopped before TypeORM closes its pool.
 */
@Injectable()
export class DelayRuntime implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly options: ResolvedDelayOptions;
  readonly store: TaskStore;
  readonly wheel: TimingWheel<undefined>;
  readonly clock: Clock;
  private readonly logger = new Logger('DelayModule');
  private readonly driver: TickDriver<undefined>;
  private readonly executor: TaskExecutor;
  private readonly loader: WindowLoader;
  private started = false;
  private stopping = false;

  constructor(
    @Inject(DELAY_MODULE_OPTIONS) moduleOptions: DelayModuleOptions,
    @Inject(DELAY_DATA_SOURCE) private readonly dataSource: DataSource,
    @Inject(CLOCK) clock: Clock | undefined,
    private readonly registry: HandlerRegistry,
  ) {
    this.options = resolveDelayOptions(moduleOptions);
    this.clock = clock ?? new SystemClock();
    this.store = new TaskStore(dataSource);
    this.wheel = new TimingWheel({
      slots: this.options.slots,
      tickMs: this.options.tickMs,
      startMs: this.clock.now(),
    });
    this.driver = new TickDriver({
      wheel: this.wheel,
      clock: this.clock,
      onDue: (entries) => this.executor.enqueue(entries.map((e) => e.id as number)),
      onError: (error) => this.logger.error(`Tick failed: ${errorText(error)}`),
    });
    this.executor = new TaskExecutor(
      dataSource,
      this.store,
      registry,
      this.clock,
      this.options,
      this.options.concurrency ?? defaultConcurrency(dataSource),
      this.logger,
      { requeue: (id, dueAtMs) => this.hold(id, dueAtMs), forget: (id) => this.wheel.cancel(id) },
    );
    const executor = this.executor;
    this.loader = new WindowLoader(
      this.store,
      this.clock,
      this.options,
      this.logger,
      (rows) => this.holdRows(rows),
      {
        start: () => executor.drainBacklog(),
        get sinceMs() {
          return executor.backlogSinceMs;
        },
      },
    );
  }

  get running(): boolean {
    return this.started && !this.stopping;
  }

  get stats() {
    return { ...this.executor.stats, held: this.wheel.size, queued: this.executor.pending };
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.reportClockOffset();
    await this.loader.start();
    this.driver.start();
    this.started = true;
    this.logger.log(
      `Instance ${this.options.instanceId} started: ${this.wheel.size} task(s) due within ${this.options.windowMs} ms held${this.loader.busy ? ' so far, more loading' : ''}, ` +
        `handlers: ${this.registry.types().join(', ') || 'none'}`,
    );
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.shutdown(true);
  }

  /**
   * Stops ticking, lets handlers in flight finish (within shutdownTimeout) and,
   * when `release` is set, hands this instance's tasks back so another
   * instance can take them at once instead of after the lease expires.
   */
  async shutdown(release: boolean): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.driver.stop();
    const finished = await this.executor.stop(this.options.shutdownTimeoutMs);
    if (!finished) {
      this.logger.warn(
        `Handlers still running after ${this.options.shutdownTimeoutMs} ms were cut off; their transactions rolled back, their tasks stay pending and go to another instance when the lease expires`,
      );
    }
    try {
      // After a cut-off, a hung handler's query may still hold row locks the
      // release would wait on: let the lease expire instead.
      await this.loader.stop(release && finished && this.dataSource.isInitialized);
    } catch (error) {
      this.logger.warn(
        `Could not release leases at shutdown; they expire in ${this.options.leaseMs} ms: ${errorText(error)}`,
      );
    }
    this.wheel.clear();
  }

  /** Holds a task in this instance's wheel if it is due within the window. */
  hold(id: number, dueAtMs: number): boolean {
    if (this.stopping) return false;
    if (dueAtMs >= this.clock.now() + this.options.windowMs) {
      this.wheel.cancel(id);
      return false;
    }
    this.wheel.add(id, dueAtMs, undefined);
    if (this.started) this.driver.poke(dueAtMs);
    return true;
  }

  /** Like hold, but never moves a task later: used when the change may still roll back. */
  holdAtLeastAsEarly(id: number, dueAtMs: number): void {
    const current = this.wheel.get(id);
    if (current && current.dueAtMs <= dueAtMs) return;
    this.hold(id, dueAtMs);
  }

  release(id: number): void {
    this.wheel.cancel(id);
  }

  /** Asks the loader to look for new work now rather than at the next heartbeat. */
  refresh(): Promise<void> {
    return this.loader.refresh();
  }

  /**
   * Resolves once everything due by the clock's now has run: the wheel turned
   * to now, the loader idle, no batch queued or in flight. For tests and tools
   * that move a ManualClock; it waits on state, not on time.
   */
  async drain(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.stopping) return;
      const due = this.wheel.advance(this.clock.now());
      if (due.length > 0) this.executor.enqueue(due.map((e) => e.id as number));
      if (!this.loader.busy && this.executor.idle && due.length === 0) return;
      if (Date.now() > deadline) {
        throw new Error(
          `DelayRuntime.drain timed out after ${timeoutMs} ms (${this.executor.pending} queued)`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  private holdRows(rows: DueRow[]): void {
    for (const row of rows) this.hold(Number(row.id), row.due_at.getTime());
  }

  private async reportClockOffset(): Promise<void> {
    try {
      const before = this.clock.now();
      const dbNow = (await this.store.databaseNow()).getTime();
      const after = this.clock.now();
      const offset = dbNow - (before + after) / 2;
      const message = `Database clock minus app clock: ${Math.round(offset)} ms (round trip ${Math.round(after - before)} ms)`;
      if (Math.abs(offset) > 2_000 && this.clock instanceof SystemClock)
        this.logger.warn(`${message}; due times follow the app's clock`);
      else this.logger.log(message);
    } catch (error) {
      throw new Error(`DelayModule cannot reach its database: ${errorText(error)}`, {
        cause: error,
      });
    }
  }
}

function defaultConcurrency(dataSource: DataSource): number {
  const options = dataSource.options as { poolSize?: number; extra?: { max?: number } };
  const pool = options.poolSize ?? options.extra?.max ?? 10;
  return Math.max(1, Math.min(10, pool - 1));
}
