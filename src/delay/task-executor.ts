import type { Logger } from '@nestjs/common';
import type { DataSource, QueryRunner } from 'typeorm';
import type { Clock } from './clock/index.js';
import { retryDelayMs, type ResolvedDelayOptions } from './delay.options.js';
import { errorText, noHandlerAtRun } from './delay.messages.js';
import type { HandlerRegistry } from './handler-registry.js';
import { CLAIM_TASKS, DEAD_LETTER_TASK, RETRY_TASK_LATER } from './sql/claim-tasks.js';
import { toTask, type TaskRow } from './task-row.js';
import type { TaskStore } from './task-store.js';

export interface ExecutorHooks {
  /** Put a task back into this instance's wheel (a retry, or a fired id that was not due yet). */
  requeue(id: number, dueAtMs: number): void;
  /** A task that should no longer be held in memory. */
  forget(id: number): void;
}

type Outcome = 'executed' | 'dead' | { id: number; dueAtMs: number; held: boolean };

export interface ExecutorStats {
  executed: number;
  failed: number;
  deadLettered: number;
  batches: number;
}

/**
 * Runs due tasks off the tick path: ids fired by the wheel queue up in due
 * order and up to `concurrency` claim transactions drain them, each taking a
 * batch. One transaction per batch (a savepoint per task, so one failing
 * handler undoes only its own writes) is what lets a burst go faster than one
 * commit per task.
 */
export class TaskExecutor {
  private queue: number[] = [];
  private head = 0;
  private readonly queued = new Set<number>();
  private inFlight = 0;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];
  private readonly active = new Set<QueryRunner>();
  readonly stats: ExecutorStats = { executed: 0, failed: 0, deadLettered: 0, batches: 0 };

  constructor(
    private readonly dataSource: DataSource,
    private readonly store: TaskStore,
    private readonly registry: HandlerRegistry,
    private readonly clock: Clock,
    private readonly options: ResolvedDelayOptions,
    private readonly concurrency: number,
    private readonly logger: Logger,
    private readonly hooks: ExecutorHooks,
  ) {}

  get pending(): number {
    return this.queue.length - this.head;
  }

  get idle(): boolean {
    return this.pending === 0 && this.inFlight === 0;
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
        if (this.idle) this.idleWaiters.splice(0).forEach((wake) => wake());
      });
    }
  }

  private async runBatch(ids: number[]): Promise<void> {
    const claimedIds = new Set<number>();
    const retries: Array<Exclude<Outcome, string>> = [];
    let runner: QueryRunner | undefined;
    const counts = { executed: 0, failed: 0, dead: 0 };
    try {
      runner = this.dataSource.createQueryRunner();
      this.active.add(runner);
      await runner.connect();
      await runner.startTransaction();
      const nowMs = this.clock.now();
      const now = new Date(nowMs);
      const claimed = (
        (await runner.query(CLAIM_TASKS, [ids, now], true)).records as TaskRow[]
      ).sort((a, b) => a.due_at.getTime() - b.due_at.getTime() || Number(a.id) - Number(b.id));
      const outcomes: Outcome[] = [];
      for (const [index, row] of claimed.entries()) {
        claimedIds.add(Number(row.id));
        // One round trip per task for the fence: the previous task's savepoint
        // is released and this one's taken in one simple-protocol query.
        if (index === 0) await runner.query('SAVEPOINT delayed_task');
        else
          await this.fence(
            runner,
            claimed[index - 1],
            outcomes,
            nowMs,
            'RELEASE SAVEPOINT delayed_task; SAVEPOINT delayed_task',
          );
        outcomes.push(await this.runOne(runner, row, nowMs));
      }
      // A separate release for the last task: COMMIT on a transaction that a
      // handler left aborted would quietly roll back the whole batch.
      if (claimed.length > 0) {
        await this.fence(
          runner,
          claimed[claimed.length - 1],
          outcomes,
          nowMs,
          'RELEASE SAVEPOINT delayed_task',
        );
      }
      for (const outcome of outcomes) {
        if (outcome === 'executed') counts.executed++;
        else if (outcome === 'dead') counts.dead++;
        else {
          counts.failed++;
          retries.push(outcome);
        }
      }
      await runner.commitTransaction();
      this.stats.batches++;
      this.stats.executed += counts.executed;
      this.stats.failed += counts.failed;
      this.stats.deadLettered += counts.dead;
    } catch (error) {
      retries.length = 0;
      claimedIds.clear();
      if (runner?.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      if (this.stopped) return;
      this.logger.error(
        `Claim transaction for ${ids.length} task(s) failed, retrying them shortly: ${errorText(error)}`,
      );
      // Nothing committed: every id is still pending in the database.
      const later = this.clock.now() + Math.max(this.options.tickMs, 1000);
      for (const id of ids) this.hooks.requeue(id, later);
      return;
    } finally {
      if (runner) this.active.delete(runner);
      await runner?.release().catch(() => undefined);
    }
    for (const retry of retries) {
      if (retry.held) this.hooks.requeue(retry.id, retry.dueAtMs);
      else this.hooks.forget(retry.id);
    }
    const missing = ids.filter((id) => !claimedIds.has(id));
    if (missing.length > 0) await this.recheck(missing);
  }

  /**
   * Closes the previous task's savepoint. If that fails, its handler returned
   * normally but left the transaction aborted (it swallowed a database
   * error): undo its writes and count it as failed, so the other tasks of the
   * batch still commit.
   */
  private async fence(
    runner: QueryRunner,
    previous: TaskRow,
    outcomes: Outcome[],
    nowMs: number,
    sql: string,
  ) {
    try {
      await runner.query(sql);
    } catch (error) {
      await runner.query('ROLLBACK TO SAVEPOINT delayed_task');
      const failure = new Error(
        `handler returned but left its transaction aborted (${errorText(error)})`,
      );
      outcomes[outcomes.length - 1] = await this.recordFailure(runner, previous, failure, nowMs);
      await runner.query(sql);
    }
  }

  /** One task inside the batch's transaction, after its savepoint was taken. */
  private async runOne(runner: QueryRunner, row: TaskRow, nowMs: number): Promise<Outcome> {
    const handler = this.registry.get(row.type);
    if (!handler) {
      const message = noHandlerAtRun(row.type);
      await runner.query(DEAD_LETTER_TASK, [row.id, message, new Date(nowMs)]);
      this.logger.error(`Task ${row.id} (${row.type}): ${message}`);
      return 'dead';
    }
    try {
      await handler(row.payload, {
        task: toTask(row),
        manager: runner.manager,
        instanceId: this.options.instanceId,
      });
      return 'executed';
    } catch (error) {
      await runner.query('ROLLBACK TO SAVEPOINT delayed_task');
      return this.recordFailure(runner, row, error, nowMs);
    }
  }

  /** Inside the savepoint, after its rollback: retry later with backoff, or dead-letter. */
  private async recordFailure(
    runner: QueryRunner,
    row: TaskRow,
    error: unknown,
    nowMs: number,
  ): Promise<Outcome> {
    const now = new Date(nowMs);
    const message = errorText(error);
    if (row.attempts >= row.max_attempts) {
      await runner.query(DEAD_LETTER_TASK, [row.id, message, now]);
      this.logger.error(
        `Task ${row.id} (${row.type}) dead-lettered after ${row.attempts} attempt(s): ${message}`,
      );
      return 'dead';
    }
    const dueAtMs = nowMs + retryDelayMs(this.options, row.attempts);
    // A retry beyond the window is left for whichever instance loads it then.
    const held = dueAtMs < nowMs + this.options.windowMs;
    await runner.query(RETRY_TASK_LATER, [
      row.id,
      message,
      new Date(dueAtMs),
      now,
      held ? this.options.instanceId : null,
    ]);
    this.logger.warn(
      `Task ${row.id} (${row.type}) failed attempt ${row.attempts}/${row.max_attempts}, retrying at ${new Date(dueAtMs).toISOString()}: ${message}`,
    );
    return { id: Number(row.id), dueAtMs, held };
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
