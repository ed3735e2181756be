import type { Logger } from '@nestjs/common';
import type { DataSource, QueryRunner } from 'typeorm';
import type { Clock } from './clock/index.js';
import type { ResolvedDelayOptions } from './delay.options.js';
import { errorText } from './delay.messages.js';
import { ClaimBatch, type BatchResult } from './claim-batch.js';
import type { HandlerRegistry } from './handler-registry.js';
import type { DueRow, TaskStore } from './task-store.js';

export interface ExecutorHooks {
  /** Put a task back into this instance's wheel (a retry, or a fired id that was not due yet). */
  requeue(id: number, dueAtMs: number): void;
  /** A task that should no longer be held in memory. */
  forget(id: number): void;
}

export interface ExecutorStats {
  executed: number;
  failed: number;
  deadLettered: number;
  batches: number;
  /** Batches whose optimistic pass failed and ran again fenced. */
  reruns: number;
}

/**
 * Runs due tasks off the tick path: ids fired by the wheel queue up in due
 * order and up to `concurrency` claim transactions drain them, each taking a
 * batch. One transaction per batch (see ClaimBatch) is what lets a burst go
 * faster than one commit per task.
 *
 * A backlog (overdue tasks no instance holds) is fed into the same queue by
 * one reader, a page at a time in due order, and claimed by id like a burst;
 * the reader waits while the queue is full, so ids read ahead stay few and the
 * wheel's own tasks, being on time, never queue behind a whole backlog.
 */
export class TaskExecutor {
  private queue: number[] = [];
  private head = 0;
  private readonly queued = new Set<number>();
  private inFlight = 0;
  /** When the backlog drain under way began; undefined while none is. */
  private backlogStartedMs: number | undefined;
  /** Asked for a drain while one was reading: read again from the start when it ends. */
  private backlogAgain = false;
  private roomWaiters: Array<() => void> = [];
  private stopped = false;
  private idleWaiters: Array<() => void> = [];
  private readonly active = new Set<QueryRunner>();
  readonly stats: ExecutorStats = {
    executed: 0,
    failed: 0,
    deadLettered: 0,
    batches: 0,
    reruns: 0,
  };
  private readonly batch: ClaimBatch;

  constructor(
    private readonly dataSource: DataSource,
    private readonly store: TaskStore,
    registry: HandlerRegistry,
    private readonly clock: Clock,
    private readonly options: ResolvedDelayOptions,
    private readonly concurrency: number,
    private readonly logger: Logger,
    private readonly hooks: ExecutorHooks,
  ) {
    this.batch = new ClaimBatch(registry, options, logger);
  }

  get pending(): number {
    return this.queue.length - this.head;
  }

  get idle(): boolean {
    return this.pending === 0 && this.inFlight === 0 && this.backlogStartedMs === undefined;
  }

  /** When the backlog drain under way began; undefined when none is. */
  get backlogSinceMs(): number | undefined {
    return this.backlogStartedMs;
  }

  /** There may be overdue tasks that nobody holds: read them from the table and run them. */
  drainBacklog(): void {
    if (this.stopped) return;
    if (this.backlogStartedMs !== undefined) {
      this.backlogAgain = true;
      return;
    }
    this.backlogStartedMs = this.clock.now();
    void this.readBacklog()
      .catch((error: unknown) => {
        // The loader's next round leases any overdue task it finds and asks again.
        this.logger.error(
          `Reading overdue tasks failed, looking again at the next loader round: ${errorText(error)}`,
        );
      })
      .finally(() => {
        this.backlogStartedMs = undefined;
        if (this.backlogAgain) {
          this.backlogAgain = false;
          this.drainBacklog();
        }
      });
  }

  private async readBacklog(): Promise<void> {
    const page = this.options.batchSize * this.concurrency;
    let after: DueRow | null = null;
    for (;;) {
      await this.room(page);
      if (this.stopped) return;
      const rows = await this.store.findOverdueUnheld(new Date(this.clock.now()), after, page);
      this.enqueue(rows.map((row) => Number(row.id)));
      if (rows.length < page) return;
      after = rows[rows.length - 1];
    }
  }

  /** Resolves once fewer than `size` ids wait in the queue (or on stop). */
  private async room(size: number): Promise<void> {
    while (!this.stopped && this.pending >= size)
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  enqueue(ids: Iterable<number>): void {
    if (this.stopped) return;
    for (const id of ids) {
      if (this.queued.has(id)) continue;
      this.queued.add(id);
      this.queue.push(id);
    }
    this.pump();
  }

  /**
   * Stops taking work and waits (up to the limit) for batches in flight. Past
   * the limit their connections are closed, which rolls their transactions
   * back: exactly what a crash would do, so those tasks stay pending.
   */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopped = true;
    this.queue = [];
    this.head = 0;
    this.queued.clear();
    // A backlog reader sees `stopped` when woken, or after its query, and ends.
    this.roomWaiters.splice(0).forEach((wake) => wake());
    if (await this.waitIdle(timeoutMs)) return true;
    // Releasing with an error makes the pool destroy the connection instead of reusing it.
    const cutOff = new Error('DelayModule shutting down: handler did not finish in time');
    for (const runner of this.active) {
      const pgRunner = runner as unknown as {
        releasePostgresConnection?: (error: Error) => Promise<void>;
      };
      await pgRunner.releasePostgresConnection?.(cutOff).catch(() => undefined);
    }
    this.active.clear();
    return false;
  }

  private async waitIdle(timeoutMs: number): Promise<boolean> {
    if (this.inFlight === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(true))),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    return finished;
  }

  private take(): number[] {
    // Spread a small queue over all workers; cap a large one at batchSize.
    const size = Math.min(
      this.options.batchSize,
      Math.max(1, Math.ceil(this.pending / this.concurrency)),
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
    while (!this.stopped && this.inFlight < this.concurrency && this.pending > 0) {
      const batch = this.take();
      this.inFlight++;
      void this.runBatch(batch).finally(() => {
        this.inFlight--;
        this.pump();
        this.roomWaiters.splice(0).forEach((wake) => wake());
        if (this.idle) this.idleWaiters.splice(0).forEach((wake) => wake());
      });
    }
  }

  private async runBatch(ids: number[]): Promise<void> {
    const runner = this.dataSource.createQueryRunner();
    this.active.add(runner);
    let result: BatchResult;
    try {
      await runner.connect();
      result = await this.batch.run(runner, ids, this.clock.now());
    } catch (error) {
      if (this.stopped) return;
      this.logger.error(
        `Claim transaction for ${ids.length} task(s) failed, retrying them shortly: ${errorText(error)}`,
      );
      // Nothing committed: every id is still pending in the database.
      const later = this.clock.now() + Math.max(this.options.tickMs, 1000);
      for (const id of ids) this.hooks.requeue(id, later);
      return;
    } finally {
      this.active.delete(runner);
      await runner.release().catch(() => undefined);
    }
    this.stats.batches++;
    if (result.rerun) this.stats.reruns++;
    for (const outcome of result.outcomes) {
      if (outcome === 'executed') this.stats.executed++;
      else if (outcome === 'dead') this.stats.deadLettered++;
      else {
        this.stats.failed++;
        if (outcome.held) this.hooks.requeue(outcome.id, outcome.dueAtMs);
        else this.hooks.forget(outcome.id);
      }
    }
    const missing = ids.filter((id) => !result.claimedIds.has(id));
    if (missing.length > 0) await this.recheck(missing);
  }

  /**
   * Fired ids the claim did not take: executed or cancelled (drop them), not
   * due yet because they were moved (wait again), or locked by a transaction
   * elsewhere that may still roll back (look again next tick).
   */
  private async recheck(ids: number[]): Promise<void> {
    try {
      const rows = await this.store.findPending(ids);
      const nowMs = this.clock.now();
      for (const row of rows) {
        if (row.locked_by !== null && row.locked_by !== this.options.instanceId) continue;
        this.hooks.requeue(
          Number(row.id),
          Math.max(row.due_at.getTime(), nowMs + this.options.tickMs),
        );
      }
    } catch (error) {
      // Still leased to this instance, so no loader would take them: look again later.
      const later = this.clock.now() + Math.max(this.options.tickMs, 1000);
      for (const id of ids) this.hooks.requeue(id, later);
      this.logger.error(
        `Rechecking ${ids.length} unclaimed task(s) failed, trying again shortly: ${errorText(error)}`,
      );
    }
  }
}
