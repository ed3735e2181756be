import { errorText } from '../delay.messages.js';
import { findOverdueUnleased } from './lease-statements.js';
import type { DueRow } from '../tasks/task-row.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import type { Dispatcher } from '../claim/dispatcher.js';

/**
 * Drains the backlog: one reader feeds overdue unleased ids to the dispatcher
 * a page at a time in due order, and waits while the claim queue is full, so
 * few ids are read ahead and the wheel's on-time tasks never queue behind a
 * whole backlog. A request while a drain runs reads again from the start when it ends.
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

  /** When the drain under way began (undefined while none runs): what fell due before is its to run, the loader leases only what falls due after. */
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
