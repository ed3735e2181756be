import { errorText } from '../delay.messages.js';
import { findOverdueUnleased } from '../claim/claim-statements.js';
import type { DueRow } from '../tasks/task-row.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import type { Dispatcher } from '../claim/dispatcher.js';

/**
 * Runs the backlog: overdue tasks that no instance holds (they fell due while
 * no instance ran, or their instance died). One reader feeds their ids to the
 * dispatcher a page at a time in due order, claimed by id like a burst; it waits
 * while the dispatcher's queue is full, so ids read ahead stay few and the
 * wheel's own tasks, being on time, never queue behind a whole backlog.
 *
 * Asked to drain (at boot, after a takeover, or when the loader leased an
 * overdue task) while one runs, it reads again from the start when it ends.
 */
export class BacklogDrainer implements LifecycleService {
  private startedMs: number | undefined;
  private again = false;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly ctx: DelayContext,
    private readonly dispatcher: Dispatcher,
  ) {}

  /**
   * When the drain under way began; undefined while none runs. It reads what
   * is due by each page's now, so everything due by then is its to run, and
   * the loader leases only what falls due after it.
   */
  get sinceMs(): number | undefined {
    return this.startedMs;
  }

  get busy(): boolean {
    return this.startedMs !== undefined;
  }

  async start(): Promise<void> {
    this.request();
  }

  request(): void {
    if (this.stopped) return;
    if (this.startedMs !== undefined) {
      this.again = true;
      return;
    }
    this.startedMs = this.ctx.clock.now();
    this.running = this.read()
      .catch((error: unknown) => {
        // The loader's next round leases any overdue task it finds and asks again.
        this.ctx.logger.error(
          `Reading overdue tasks failed, looking again at the next loader round: ${errorText(error)}`,
        );
      })
      .finally(() => {
        this.startedMs = undefined;
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.request();
        }
      });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // The reader sees `stopped` when the dispatcher's stop wakes it, or after its query.
    await this.running;
  }

  private async read(): Promise<void> {
    const page = this.ctx.options.batchSize * this.ctx.concurrency;
    let after: DueRow | null = null;
    for (;;) {
      await this.dispatcher.room(page);
      if (this.stopped) return;
      const rows = await findOverdueUnleased(
        this.ctx.db.pool,
        new Date(this.ctx.clock.now()),
        after,
        page,
        this.ctx.policy.handledTypes,
      );
      this.dispatcher.fire(rows);
      if (rows.length < page) return;
      after = rows[rows.length - 1];
    }
  }
}
