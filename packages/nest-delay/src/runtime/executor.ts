import type { TaskId } from '../task.types.js';
import { errorText } from '../delay.messages.js';
import type { HandlerRegistry } from '../handler-registry.js';
import { retryDelayMs } from '../delay.options.js';
import {
  chargeTimedOut,
  forgetAttempts,
  recordAttemptAndBegin,
} from '../store/attempt-statements.js';
import { findPendingByIds } from '../store/claim-statements.js';
import { claimConnection, type ClaimConnection, type Sql } from '../store/sql.js';
import { ClaimBatch, type BatchResult } from './claim-batch.js';
import type { DelayContext, LifecycleService } from './delay-context.js';
import { ExecutionStats } from './execution-stats.js';
import { HandlerCutOff } from './handler-deadline.js';
import { reportBatch } from './outcome-events.js';
import type { TaskWheel } from './task-wheel.js';

/**
 * Deletes the notes of claims cut off by a stop. A note stays locked by its
 * claim's transaction until the server has ended the closed session, so this
 * skips locked notes and tries again for up to a second; one still locked
 * then (a backend busy in a long statement) stays, and is charged later.
 */
async function forgetStopped(pool: Sql, attempts: string[]): Promise<void> {
  for (let tries = 0; attempts.length > 0 && tries < 10; tries++) {
    if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    const forgotten = await forgetAttempts(pool, attempts).catch(() => [] as string[]);
    attempts = attempts.filter((id) => !forgotten.includes(id));
  }
}

/**
 * Runs due tasks off the tick path: ids fired by the wheel (or read by the
 * backlog drainer) queue up in due order, and up to `concurrency` claim
 * transactions take them a batch at a time (see ClaimBatch). One transaction
 * per batch is what lets a burst go faster than one commit per task.
 */
export class Executor implements LifecycleService {
  private queue: TaskId[] = [];
  private head = 0;
  /**
   * Tasks whose last attempt was cut off: each runs in a claim of its own,
   * with no other claim in flight, before the queue. If one kills the process
   * again, nothing else was running to be charged for it.
   */
  private alone: TaskId[] = [];
  private soloInFlight = false;
  /**
   * Attempt rows of claims that failed without running anything, not yet
   * deleted (the database was unreachable): deleted before the next claim, so
   * a database outage does not leave their tasks looking cut off.
   */
  private unforgotten: string[] = [];
  private readonly queued = new Set<TaskId>();
  /**
   * Ids in a claim under way. Not queued again meanwhile: a second claim of
   * one could not lock it anyway, but its note would list it, and if the
   * process died then, the task would be charged twice for one death.
   */
  private readonly running = new Set<TaskId>();
  /** Fired ids a claim passed by once and that were put straight back (see recheck). */
  private readonly missedOnce = new Set<TaskId>();
  private inFlight = 0;
  /** Batches taken since the executor was last idle: the ramp of batch sizes (see take). */
  private launchedSinceIdle = 0;
  private stopped = false;
  private roomWaiters: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];
  /** Claim connections in use, with the attempt each is running (once noted). */
  private readonly connections = new Map<ClaimConnection, string | undefined>();
  private readonly batch: ClaimBatch;
  readonly stats = new ExecutionStats();

  constructor(
    private readonly ctx: DelayContext,
    private readonly registry: HandlerRegistry,
    private readonly wheel: TaskWheel,
  ) {
    this.batch = new ClaimBatch(ctx, registry);
  }

  /** Ids waiting for a claim transaction. */
  get queuedCount(): number {
    return this.queue.length - this.head + this.alone.length;
  }

  /** Nothing queued and no claim transaction running. */
  get idle(): boolean {
    return this.queuedCount === 0 && this.inFlight === 0;
  }

  async start(): Promise<void> {}

  enqueue(ids: Iterable<TaskId>): void {
    if (this.stopped) return;
    for (const id of ids) {
      if (this.queued.has(id) || this.running.has(id)) continue;
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
    this.alone = [];
    this.queued.clear();
    this.wake(this.roomWaiters);
    this.wake(this.idleWaiters);
    const timeoutMs = this.ctx.options.shutdownTimeoutMs;
    if (await this.finishedWithin(timeoutMs)) return;
    this.ctx.logger.warn(
      `Handlers still running after ${timeoutMs} ms were cut off; their transactions rolled back, ` +
        `their tasks stay pending and go to another instance when the lease expires`,
    );
    const attempts = [...this.connections.values()].filter((id): id is string => id !== undefined);
    for (const connection of this.connections.keys()) connection.cutOff();
    this.connections.clear();
    // The process chose to stop them, not their tasks: forget their notes, so
    // no attempt is charged, once the closed sessions have let go of them.
    await forgetStopped(this.ctx.db.pool, attempts);
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
    const { batchSize } = this.ctx.options;
    const { concurrency } = this.ctx;
    const waiting = this.queue.length - this.head;
    // A burst (more than a full batch for every worker) starts from idle at
    // one task a batch and doubles (1, 2, 4, ...): its first task commits
    // after a handful of round trips, not after batchSize effects interleaved
    // with every other worker's, and full batches follow within a few claims.
    const ramp =
      waiting > concurrency * batchSize ? 2 ** Math.min(this.launchedSinceIdle, 30) : batchSize;
    this.launchedSinceIdle++;
    // Spread a small queue over all workers; cap a large one at batchSize.
    const size = Math.min(batchSize, ramp, Math.max(1, Math.ceil(waiting / concurrency)));
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
    while (!this.stopped && !this.soloInFlight) {
      if (this.alone.length > 0) {
        // Wait for the batches in flight to end, then run it by itself.
        if (this.inFlight === 0) this.launch([this.alone.shift() as TaskId], true);
        return;
      }
      if (this.inFlight >= this.ctx.concurrency || this.queue.length === this.head) return;
      this.launch(this.take(), false);
    }
  }

  private launch(batch: TaskId[], alone: boolean): void {
    for (const id of batch) this.running.add(id);
    this.inFlight++;
    this.soloInFlight = alone;
    void this.runBatch(batch, alone).finally(() => {
      for (const id of batch) this.running.delete(id);
      this.inFlight--;
      if (alone) this.soloInFlight = false;
      this.pump();
      this.wake(this.roomWaiters);
      if (this.idle) {
        this.launchedSinceIdle = 0;
        this.wake(this.idleWaiters);
      }
    });
  }

  private async runBatch(ids: TaskId[], alone: boolean): Promise<void> {
    const { ctx } = this;
    let connection: ClaimConnection | undefined;
    let attemptId: string | undefined;
    let result: BatchResult;
    let nowMs: number;
    let startedAt: number;
    try {
      connection = await claimConnection(ctx.db);
      startedAt = performance.now();
      // A stop that came while this waited for a connection has already cut off the others.
      if (this.stopped) return;
      this.connections.set(connection, undefined);
      nowMs = ctx.clock.now();
      if (this.unforgotten.length > 0) {
        const stale = this.unforgotten.splice(0);
        await forgetAttempts(connection.sql, stale).catch(() => this.unforgotten.push(...stale));
      }
      // Committed before the claim begins (in the same round trip as its
      // BEGIN): survives the claim if it never commits.
      attemptId = await recordAttemptAndBegin(
        connection,
        ctx.options.instanceId,
        ids,
        new Date(nowMs),
      );
      this.connections.set(connection, attemptId);
      result = await this.batch.run(connection, ids, { nowMs, attemptId, alone, begun: true });
    } catch (error) {
      if (error instanceof HandlerCutOff && attemptId !== undefined && !this.stopped) {
        await this.chargeCutOff(error, attemptId, ids);
        return;
      }
      // Failed as a whole (or stopped): no task's fault, so its note goes.
      const failed = attemptId;
      if (failed !== undefined) {
        await forgetAttempts(ctx.db.pool, [failed]).catch(() => this.unforgotten.push(failed));
      }
      // Its session may still hold the note's lock, or be broken: close it rather than reuse it.
      connection?.cutOff();
      if (this.stopped) return;
      ctx.logger.error(
        `Claim transaction for ${ids.length} task(s) failed, retrying them shortly: ${errorText(error)}`,
      );
      // Nothing committed: every id is still pending in the database.
      this.holdAll(ids, ctx.clock.now() + Math.max(ctx.options.tickMs, 1000));
      return;
    } finally {
      if (connection) {
        this.connections.delete(connection);
        await connection.release();
      }
    }
    this.stats.record(result);
    reportBatch(ctx.observer, result, ids.length, nowMs, performance.now() - startedAt);
    for (const outcome of result.outcomes) {
      if (outcome.kind !== 'retry' && outcome.kind !== 'snooze') continue;
      if (outcome.held) this.wheel.hold(outcome.id, outcome.dueAtMs);
      else this.wheel.release(outcome.id);
    }
    for (const id of result.deferred) this.queueAlone(id);
    for (const id of result.claimedIds) this.missedOnce.delete(id);
    const missing = ids.filter((id) => !result.claimedIds.has(id) && !result.deferred.includes(id));
    if (missing.length > 0) await this.recheck(missing);
  }

  private queueAlone(id: TaskId): void {
    if (this.stopped) return;
    this.alone.push(id);
    this.pump();
  }

  /**
   * A handler ignored its timeout and its claim was cut off: every effect of
   * the batch rolled back. Its attempt is charged (retried with backoff, or
   * dead-lettered); its batch-mates were never at fault and run again now.
   */
  private async chargeCutOff(cut: HandlerCutOff, attemptId: string, ids: TaskId[]): Promise<void> {
    const { ctx } = this;
    const nowMs = ctx.clock.now();
    const retryAtMs = nowMs + retryDelayMs(this.registry.backoffOf(cut.taskType), cut.attempt);
    const held = ctx.policy.isWithinWindow(retryAtMs, nowMs);
    ctx.logger.error(`Task ${cut.taskId} (${cut.taskType}): ${cut.message}`);
    try {
      const charged = await chargeTimedOut(
        ctx.db.pool,
        attemptId,
        cut.taskId,
        cut.message,
        new Date(retryAtMs),
        held ? ctx.options.instanceId : null,
        new Date(nowMs),
      );
      this.stats.recordOne(cut.taskType, charged?.dead ? 'dead' : 'retry');
      if (charged) this.reportCutOff(cut, charged.dead, retryAtMs);
      if (charged && !charged.dead && held) this.wheel.hold(cut.taskId, retryAtMs);
      else this.wheel.release(cut.taskId);
    } catch (error) {
      // Uncharged, rather than let its note charge the batch-mates below as well.
      this.unforgotten.push(attemptId);
      ctx.logger.error(`Charging the cut-off task ${cut.taskId} failed: ${errorText(error)}`);
    }
    // Their claim is over: they may be queued again at once.
    for (const id of ids) this.running.delete(id);
    this.enqueue(ids.filter((id) => id !== cut.taskId));
  }

  private reportCutOff(cut: HandlerCutOff, dead: boolean, retryAtMs: number): void {
    const { observer } = this.ctx;
    if (!observer.wants(dead ? 'onDeadLettered' : 'onFailed')) return;
    const base = {
      id: cut.taskId,
      type: cut.taskType,
      key: cut.taskKey,
      dueAt: cut.dueAt,
      attempt: cut.attempt,
    };
    if (dead) observer.emit('onDeadLettered', { ...base, reason: cut.message });
    else observer.emit('onFailed', { ...base, error: cut.message, retryAt: new Date(retryAtMs) });
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
      const pending = new Set(rows.map((row) => row.id));
      for (const id of ids) if (!pending.has(id)) this.missedOnce.delete(id);
      for (const row of rows) {
        if (row.locked_by !== null && !this.ctx.policy.holds(row.locked_by)) continue;
        // A first miss is most often a moment's lock (the loader leasing it
        // just then): try again at once. A second waits a tick, so a row that
        // a long transaction holds is not claimed in a tight loop.
        const again = this.missedOnce.delete(row.id);
        if (!again) this.missedOnce.add(row.id);
        const dueAtMs = row.due_at.getTime();
        this.wheel.hold(
          row.id,
          again ? Math.max(dueAtMs, nowMs + this.ctx.options.tickMs) : dueAtMs,
        );
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
