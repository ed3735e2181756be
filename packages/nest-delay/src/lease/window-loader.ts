import { errorText } from '../delay.messages.js';
import { leaseDueTasks } from './lease-statements.js';
import type { BacklogDrainer } from './backlog-drainer.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import { PeriodicRound } from '../context/periodic-round.js';
import type { TaskWheel } from '../firing/task-wheel.js';
import type { StrandedSweep } from './stranded-sweep.js';

/**
 * Every heartbeat, leases the unleased tasks that have come within the window
 * into the wheel, page by page in due order. Tasks beyond the window stay in
 * Postgres only: memory depends on the window, not on the table.
 */
export class WindowLoader implements LifecycleService {
  private readonly rounds: PeriodicRound;
  private stopped = false;

  constructor(
    private readonly ctx: DelayContext,
    private readonly wheel: TaskWheel,
    private readonly backlog: BacklogDrainer,
    private readonly sweep: StrandedSweep,
  ) {
    this.rounds = new PeriodicRound(
      ctx.clock,
      ctx.options.heartbeatMs,
      () => this.loadAll(),
      (error) =>
        ctx.logger.error(
          `Delay loader round failed, trying again in ${ctx.options.heartbeatMs} ms: ${errorText(error)}`,
        ),
    );
  }

  get busy(): boolean {
    return this.rounds.busy;
  }

  /** Leases the earliest page and returns: the rest of a large window loads behind the running wheel. */
  async start(): Promise<void> {
    // The rest loads as a round, so a timer's round joins it instead of racing it.
    if (await this.loadPage()) void this.rounds.runNow();
    this.rounds.start();
  }

  refresh(): Promise<void> {
    return this.rounds.runNow();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.rounds.stop();
  }

  /** The stranded sweep runs in the same round, so no lease of the loader's is under way while it looks. */
  private async loadAll(): Promise<void> {
    while (await this.loadPage());
    if (!this.stopped) await this.sweep.run();
  }

  /** Leases one page of the window, in due order; true if the page was full (more may follow). */
  private async loadPage(): Promise<boolean> {
    if (this.stopped) return false;
    const { clock, options, policy } = this.ctx;
    const nowMs = clock.now();
    const since = this.backlog.sinceMs;
    const rows = await leaseDueTasks(
      this.ctx.db.pool,
      options.instanceId,
      new Date(policy.horizonMs(nowMs)),
      // Due after the drain began: a little overlap with it (the claim keeps
      // each task to one run), and no gap between them.
      since === undefined ? '-infinity' : new Date(Math.min(since, nowMs)),
      options.loadPageSize,
      policy.handledTypes,
    );
    for (const row of rows) this.wheel.hold(row.id, row.due_at.getTime());
    // Leased overdue tasks fire at once; more like them are left to a drain.
    if (rows.length > 0 && rows[0].due_at.getTime() <= nowMs) this.backlog.request();
    return rows.length === options.loadPageSize;
  }
}
