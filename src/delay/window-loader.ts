import type { Logger } from '@nestjs/common';
import type { Clock, TimerHandle } from './clock/index.js';
import type { ResolvedDelayOptions } from './delay.options.js';
import { errorText } from './delay.messages.js';
import type { DueRow, TaskStore } from './task-store.js';

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
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly store: TaskStore,
    private readonly clock: Clock,
    private readonly options: ResolvedDelayOptions,
    private readonly logger: Logger,
    private readonly onLoaded: (rows: DueRow[]) => void,
  ) {}

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** First load at boot: reclaims what a previous run under this id held, then everything overdue. */
  async start(): Promise<void> {
    const id = this.options.instanceId;
    await this.store.releaseInstance(id, false);
    await this.beat();
    await this.store.releaseOrphans(new Date(this.clock.now()));
    await this.load();
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
    if (release) await this.store.releaseInstance(this.options.instanceId, true);
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
    const expired = await this.store.heartbeat(
      this.options.instanceId,
      new Date(nowMs),
      new Date(nowMs + this.options.leaseMs),
    );
    if (expired.length > 0) {
      await this.store.releaseExpiredInstances(expired, new Date(nowMs));
      this.logger.warn(
        `Took over the tasks of instance(s) whose lease expired: ${expired.join(', ')}`,
      );
    }
  }

  private async load(): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      const nowMs = this.clock.now();
      const rows = await this.store.leaseDue(
        this.options.instanceId,
        new Date(nowMs + this.options.windowMs),
        this.options.loadPageSize,
        new Date(nowMs),
      );
      if (rows.length > 0) this.onLoaded(rows);
      if (rows.length < this.options.loadPageSize) return;
    }
  }
}
