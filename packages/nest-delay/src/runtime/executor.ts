import type { TaskId } from '../task.types.js';
import { errorText } from '../delay.messages.js';
import type { HandlerRegistry } from '../handler-registry.js';
import { findPendingByIds } from '../store/claim-statements.js';
import { claimConnection, type ClaimConnection } from '../store/sql.js';
import { ClaimBatch, type BatchResult } from './claim-batch.js';
import type { DelayContext, LifecycleService } from './delay-context.js';
import { ExecutionStats } from './execution-stats.js';
import type { TaskWheel } from './task-wheel.js';

/**
 * Runs due tasks off the tick path: ids fired by the wheel (or read by the
 * backlog drainer) queue up in due order, and up to `concurrency` claim
 * transactions take them a batch at a time (see ClaimBatch). One transaction
 * per batch is what lets a burst go faster than one commit per task.
 */
export class Executor implements LifecycleService {
  private queue: TaskId[] = [];
  private head = 0;
  private readonly queued = new Set<TaskId>();
  private inFlight = 0;
  private stopped = false;
  private roomWaiters: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];
  private readonly connections = new Set<ClaimConnection>();
  private readonly batch: ClaimBatch;
  readonly stats = new ExecutionStats();

  constructor(
    private readonly ctx: DelayContext,
    registry: HandlerRegistry,
    private readonly wheel: TaskWheel,
  ) {
    this.batch = new ClaimBatch(ctx, registry);
  }

  /** Ids waiting for a claim transaction. */
  get queuedCount(): number {
    return this.queue.length - this.head;
  }

  /** Nothing queued and no claim transaction running. */
  get idle(): boolean {
    return this.queuedCount === 0 && this.inFlight === 0;
  }

  async start(): Promise<void> {}

  enqueue(ids: Iterable<TaskId>): void {
    if (this.stopped) return;
    for (const id of ids) {
      if (this.queued.has(id)) continue;
      this.queued.add(id);
      this.queue.push(id);
    }
    this.pump();
  }

  /** Resolves once fewer than `size` ids wait in the queue (or on stop): a reader's back-pressure. */
  async room(size: number): Promise<void> {
    while (!this.stopped && this.queuedCount >= size)
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  /** Resolves when nothing is queued or running. */
  whenIdle(): Promise<void> {
    if (this.idle || this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking work and waits (up to shutdownTimeout) for the batches in
   * flight. Past that their connections are destroyed, which rolls their
   * transactions back: exactly what a crash would do, so those tasks stay
   * pending and run elsewhere once this instance's lease expires.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue = [];
    this.head = 0;
    this.queued.clear();
    this.wake(this.roomWaiters);
    this.wake(this.idleWaiters);
    const timeoutMs = this.ctx.options.shutdownTimeoutMs;
    if (await this.finishedWithin(timeoutMs)) return;
    this.ctx.logger.warn(
      `Handlers still running after ${timeoutMs} ms were cut off; their transactions rolled back, ` +
        `their tasks stay pending and go to another instance when the lease expires`,
    );
    const reason = new Error('DelayModule shutting down: handler did not finish in time');
    for (const connection of this.connections) connection.cutOff(reason);
    this.connections.clear();
  }

  /** True when a handler was cut off at stop (its locks may linger until the server notices). */
  get cutOffAtStop(): boolean {
    return this.stopped && this.inFlight > 0;
  }

  private async finishedWithin(timeoutMs: number): Promise<boolean> {
    if (this.inFlight === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(this.inFlight === 0))),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    return finished;
  }

  private wake(waiters: Array<() => void>): void {
    waiters.splice(0).forEach((wake) => wake());
  }

  private take(): TaskId[] {
    // Spread a small queue over all workers; cap a large one at batchSize.
    const size = Math.min(
      this.ctx.options.batchSize,
      Math.max(1, Math.ceil(this.queuedCount / this.ctx.concurrency)),
    );
    const batch = this.queue.slice(this.head, this.head + size);
    this.head += batch.length;
    if (this.head > 4096 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    for (const id of batch) this.queued.delete(id);
    return batch;
  }

  private pump(): void {
    while (!this.stopped && this.inFlight < this.ctx.concurrency && this.queuedCount > 0) {
      const batch = this.take();
      this.inFlight++;
      void this.runBatch(batch).finally(() => {
        this.inFlight--;
        this.pump();
        this.wake(this.roomWaiters);
        if (this.idle) this.wake(this.idleWaiters);
      });
    }
  }

  private async runBatch(ids: TaskId[]): Promise<void> {
    let connection: ClaimConnection | undefined;
    let result: BatchResult;
    try {
      connection = await claimConnection(this.ctx.db);
      this.connections.add(connection);
      result = await this.batch.run(connection, ids, this.ctx.clock.now());
    } catch (error) {
      if (this.stopped) return;
      this.ctx.logger.error(
        `Claim transaction for ${ids.length} task(s) failed, retrying them shortly: ${errorText(error)}`,
      );
      // Nothing committed: every id is still pending in the database.
      this.holdAll(ids, this.ctx.clock.now() + Math.max(this.ctx.options.tickMs, 1000));
      return;
    } finally {
      if (connection) {
        this.connections.delete(connection);
        await connection.release();
      }
    }
    this.stats.record(result);
    for (const outcome of result.outcomes) {
      if (outcome.kind !== 'retry' && outcome.kind !== 'snooze') continue;
      if (outcome.held) this.wheel.hold(outcome.id, outcome.dueAtMs);
      else this.wheel.release(outcome.id);
    }
    const missing = ids.filter((id) => !result.claimedIds.has(id));
    if (missing.length > 0) await this.recheck(missing);
  }

  /**
   * Fired ids the claim did not take: executed or cancelled (drop them), not
   * due yet because they were moved (wait again), or locked by a transaction
   * elsewhere that may still roll back (look again a tick later).
   */
  private async recheck(ids: TaskId[]): Promise<void> {
    try {
      const rows = await findPendingByIds(this.ctx.db.pool, ids);
      const nowMs = this.ctx.clock.now();
      for (const row of rows) {
        if (row.locked_by !== null && !this.ctx.policy.holds(row.locked_by)) continue;
        this.wheel.hold(row.id, Math.max(row.due_at.getTime(), nowMs + this.ctx.options.tickMs));
      }
    } catch (error) {
      // Still leased to this instance, so no loader would take them: look again later.
      this.holdAll(ids, this.ctx.clock.now() + Math.max(this.ctx.options.tickMs, 1000));
      this.ctx.logger.error(
        `Rechecking ${ids.length} unclaimed task(s) failed, trying again shortly: ${errorText(error)}`,
      );
    }
  }

  private holdAll(ids: TaskId[], dueAtMs: number): void {
    for (const id of ids) this.wheel.hold(id, dueAtMs);
  }
}
