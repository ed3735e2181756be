import type { Logger } from '@nestjs/common';
import { SystemClock, type Clock, type TimerHandle } from './clock/index.js';
import type { ResolvedDelayOptions } from './delay.options.js';
import { errorText } from './delay.messages.js';
import type { DueRow, TaskStore } from './task-store.js';

/** The executor's backlog drain, as far as the loader needs it. */
export interface BacklogDrain {
  /** There may be overdue tasks that nobody holds: read them from the table and run them. */
  start(): void;
  /**
   * When the drain under way began (undefined: none). It reads what is due by
   * each page's now, so everything due by then is its to run, not the loader's.
   */
  readonly sinceMs: number | undefined;
}

/** Heartbeats between two sweeps for orphaned leases (one a minute with the default lease). */
const ORPHAN_SWEEP_EVERY = 6;
/** App-to-database clock offset worth an alarm: leases and due times compare clocks. */
const CLOCK_OFFSET_LIMIT_MS = 2_000;

/**
 * Keeps this instance's share of the window in memory and its lease alive.
 *
 * Every heartbeat (a third of the lease) it renews the instance's row in
 * `delay_instance`, frees the tasks of instances whose lease ran out, and
 * leases the unheld tasks that have come within the window, page by page in
 * due order. Tasks beyond the window stay in Postgres only, so memory depends
 * on the window, not on the table.
 */
export class WindowLoader {
  private timer: TimerHandle | undefined;
  private beats = 0;
  private clockWarned = false;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly store: TaskStore,
    private readonly clock: Clock,
    private readonly options: ResolvedDelayOptions,
    private readonly logger: Logger,
    private readonly onLoaded: (rows: DueRow[]) => void,
    private readonly backlog: BacklogDrain,
  ) {}

  get busy(): boolean {
    return this.running !== undefined;
  }

  /**
   * First load at boot: reclaims what a previous run under this id held,
   * starts draining what is already overdue, then leases the first page of the
   * window (the earliest due) and returns, so the wheel starts turning while
   * the rest of a large window loads behind it (`busy` until it is done).
   */
  async start(): Promise<void> {
    const id = this.options.instanceId;
    await this.store.releaseInstance(id);
    await this.beat();
    await this.store.releaseOrphans(new Date(this.clock.now()));
    // Whatever fell due while no instance ran is run straight from the table.
    this.backlog.start();
    if (await this.loadPage()) {
      this.running = this.load()
        .catch((error: unknown) => {
          this.logger.error(
            `Delay loader failed while loading the window, trying again in ${this.options.heartbeatMs} ms: ${errorText(error)}`,
          );
        })
        .finally(() => {
          this.running = undefined;
        });
    }
    this.arm();
  }

  /** Runs one heartbeat-and-load round now (also what the timer does). */
  refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.running ??= this.round().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  async stop(release: boolean): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.running?.catch(() => undefined);
    if (release) await this.store.retireInstance(this.options.instanceId);
  }

  private arm(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimer(this.clock.now() + this.options.heartbeatMs, () => {
      this.timer = undefined;
      void this.refresh().finally(() => this.arm());
    });
  }

  private async round(): Promise<void> {
    try {
      await this.beat();
      await this.load();
    } catch (error) {
      this.logger.error(
        `Delay loader round failed, trying again in ${this.options.heartbeatMs} ms: ${errorText(error)}`,
      );
    }
  }

  private async beat(): Promise<void> {
    const nowMs = this.clock.now();
    const { expired, dbNow } = await this.store.heartbeat(
      this.options.instanceId,
      new Date(nowMs),
      new Date(nowMs + this.options.leaseMs),
    );
    this.watchClock(dbNow.getTime() - (nowMs + this.clock.now()) / 2);
    // Every so often, also free tasks held by instances that left no lease row
    // at all (a row deleted by a takeover while its owner was still running).
    if (++this.beats % ORPHAN_SWEEP_EVERY === 0) await this.store.releaseOrphans(new Date(nowMs));
    if (expired.length > 0) {
      await this.store.releaseExpiredInstances(expired, new Date(nowMs));
      this.backlog.start();
      this.logger.warn(
        `Took over the tasks of instance(s) whose lease expired: ${expired.join(', ')}`,
      );
    }
  }

  private async load(): Promise<void> {
    while (await this.loadPage());
  }

  /** Leases one page of the window, in due order; true if the page was full (more may follow). */
  private async loadPage(): Promise<boolean> {
    if (this.stopped) return false;
    const nowMs = this.clock.now();
    const since = this.backlog.sinceMs;
    const rows = await this.store.leaseDue(
      this.options.instanceId,
      new Date(nowMs + this.options.windowMs),
      this.options.loadPageSize,
      new Date(nowMs),
      // Due after the drain began: a little overlap with it (the claim keeps
      // each task to one run), and no gap between them.
      since === undefined ? '-infinity' : new Date(Math.min(since, nowMs)),
    );
    if (rows.length > 0) this.onLoaded(rows);
    // Leased overdue tasks fire at once; more like them are left to a drain.
    if (rows.length > 0 && rows[0].due_at.getTime() <= nowMs) this.backlog.start();
    return rows.length === this.options.loadPageSize;
  }

  /**
   * Due times and leases are compared with each instance's own clock, so a
   * clock that drifted from the database's (and so from the other instances')
   * deserves a loud message; it is checked at every heartbeat, not only at start.
   */
  private watchClock(offsetMs: number): void {
    // A ManualClock is meant to be far from the database's.
    if (!(this.clock instanceof SystemClock)) return;
    const large = Math.abs(offsetMs) > CLOCK_OFFSET_LIMIT_MS;
    if (large && !this.clockWarned) {
      this.logger.error(
        `App clock is ${Math.round(-offsetMs)} ms off the database's: due times and leases may be off by as much across instances`,
      );
    } else if (!large && this.clockWarned) {
      this.logger.log(`App clock is back within ${CLOCK_OFFSET_LIMIT_MS} ms of the database's`);
    }
    this.clockWarned = large;
  }
}
