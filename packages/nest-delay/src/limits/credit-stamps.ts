import { errorText } from '../delay.messages.js';
import type { DelayContext } from '../context/delay-context.js';
import { STAMP_TRIES } from '../context/tuning.js';
import { stampCredits, type StartedCredit } from './credit-statements.js';


/**
 * Stamps rate credits after their starts, as many as are waiting in one
 * statement: a start queues its credit; one statement is in flight at a
 * time, and takes everything queued when it goes. At a steady rate that is
 * a statement per round trip rather than one per start (a transaction each:
 * the rate bench's largest cost). A batch that fails is tried again a few
 * times; after that its credits stay in flight, the safe side, until this
 * instance restarts or is taken over (reapCredits).
 */
export class CreditStamps {
  private queued: StartedCredit[] = [];
  private flushing: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly ctx: DelayContext,
    /** The clock's time for a clock of the test's own; null: the database's. */
    private readonly nowMs: () => number | null,
    /** A line's credit was stamped: a line waiting on its credits may ask again. */
    private readonly stamped: (type: string, key: string) => void,
  ) {}

  add(credit: StartedCredit): void {
    this.queued.push(credit);
    this.flushing ??= this.flush();
  }

  /** Stamps queued or under way. */
  get busy(): boolean {
    return this.flushing !== undefined;
  }

  /** Stamps what is queued (each batch tried once more at most), then resolves. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.flushing;
  }

  private async flush(): Promise<void> {
    try {
      while (this.queued.length > 0) await this.write(this.queued.splice(0));
    } finally {
      this.flushing = undefined;
    }
  }

  private async write(batch: StartedCredit[]): Promise<void> {
    const { ctx } = this;
    for (let tries = 1; ; tries++) {
      try {
        await stampCredits(ctx.db.pool, batch, ctx.options.instanceId, this.nowMs());
        break;
      } catch (error) {
        if (tries >= STAMP_TRIES || (this.stopped && tries >= 2)) {
          ctx.logger.error(
            `Stamping ${batch.length} rate credit(s) of ${batch[0].type} failed; they stay in use until this instance restarts or is taken over: ${errorText(error)}`,
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 200 * tries));
      }
    }
    const lines = new Map(batch.map((c) => [`${c.type}\u001f${c.key}`, c]));
    for (const { type, key } of lines.values()) this.stamped(type, key);
  }
}
