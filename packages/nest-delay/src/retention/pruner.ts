import { errorText } from '../delay.messages.js';
import { pruneCredits } from '../limits/gate-claims.js';
import { pruneTasks } from './prune-statements.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import { PeriodicRound } from '../context/periodic-round.js';
import { CREDIT_KEEP_MS, PRUNE_BATCH, PRUNE_REST_PER_BATCH } from '../context/tuning.js';

/**
 * Deletes finished tasks past their retention every `retention.interval`, a
 * batch at a time, one instance at a time (an advisory lock); pending tasks
 * are never touched, so a claim never waits on a prune.
 */
export class Pruner implements LifecycleService {
  private readonly rounds: PeriodicRound;
  private pruned = 0;
  /** A round under way ends after its current batch: a backlog of millions must not hold up a shutdown. */
  private stopping = false;
  /** The last round's failure, for runNow (and DelayTester.prune) to report rather than only log. */
  private failure: unknown;

  constructor(private readonly ctx: DelayContext) {
    this.rounds = new PeriodicRound(
      ctx.clock,
      ctx.options.pruneEveryMs,
      () => this.prune(),
      (error) => {
        this.failure = error;
        ctx.logger.error(`Pruning finished tasks failed, trying again later: ${errorText(error)}`);
      },
    );
  }

  async start(): Promise<void> {
    const { keepFinishedMs, keepDeadMs } = this.ctx.options;
    if (keepFinishedMs !== null || keepDeadMs !== null) this.rounds.start();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.rounds.stop();
  }

  /** Resolves with how many were deleted. */
  async runNow(): Promise<number> {
    const before = this.pruned;
    this.failure = undefined;
    await this.rounds.runNow();
    if (this.failure !== undefined) throw this.failure;
    return this.pruned - before;
  }

  private async prune(): Promise<void> {
    const { clock, options, db } = this.ctx;
    // Unused rate credits too: a per-key rate limit would otherwise keep a row per key forever.
    await pruneCredits(db.pool, new Date(clock.now() - CREDIT_KEEP_MS));
    if (options.keepFinishedMs === null && options.keepDeadMs === null) return;
    const nowMs = clock.now();
    const finishedBefore =
      options.keepFinishedMs === null ? null : new Date(nowMs - options.keepFinishedMs);
    const deadBefore = options.keepDeadMs === null ? null : new Date(nowMs - options.keepDeadMs);
    for (;;) {
      const startedAt = performance.now();
      const deleted = await pruneTasks(db.pool, finishedBefore, deadBefore, PRUNE_BATCH);
      this.pruned += deleted;
      if (deleted < PRUNE_BATCH || this.stopping) return;
      // Wall time, not the app's clock: this spaces out work, it schedules nothing.
      const restMs = (performance.now() - startedAt) * PRUNE_REST_PER_BATCH;
      await new Promise((resolve) => setTimeout(resolve, restMs));
      if (this.stopping) return;
    }
  }
}
