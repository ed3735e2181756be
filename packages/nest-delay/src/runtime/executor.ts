import type { TaskId } from '../task.types.js';
import { errorText } from '../delay.messages.js';
import type { HandlerRegistry } from '../handler-registry.js';
import { retryDelayMs } from '../delay.options.js';
import { DatabaseClock } from '../clock/index.js';
import { recordAttemptAndBegin } from '../store/attempt-statements.js';
import {
  reapCredits,
  returnCredit,
  stampCredit,
  takeCredits,
  type TakenCredit,
} from '../store/limit-statements.js';
import { findPendingByIds } from '../store/claim-statements.js';
import { claimConnection, type ClaimConnection } from '../store/sql.js';
import { writeCharge } from '../store/transition-statements.js';
import { charge, type Fate } from '../transitions/task-transitions.js';
import { ClaimBatch, type BatchResult } from './claim-batch.js';
import { ClaimQueue } from './claim-queue.js';
import type { DelayContext, LifecycleService } from './delay-context.js';
import { ExecutionStats } from './execution-stats.js';
import { HandlerCutOff } from './handler-deadline.js';
import { LimitGate, type GateClaim, type GateItem, type GateOutcome } from './limit-gate.js';
import { NoteKeeper } from './note-keeper.js';
import { reportBatch, reportFate } from './outcome-events.js';
import type { TaskWheel } from './task-wheel.js';
import { FAILED_CLAIM_RETRY_MIN_MS } from './tuning.js';

/**
 * Decides what runs when: ids fired by the wheel (or read by the backlog
 * drainer) wait in the claim queue in due order, and up to `concurrency`
 * claim transactions take them a batch at a time (ClaimBatch runs one). One
 * transaction per batch is what lets a burst go faster than one commit per
 * task. A task that may only run alone waits for every claim in flight to
 * end, then runs by itself.
 *
 * Around each claim: its attempt note is committed with its BEGIN (see
 * recordAttemptAndBegin); after it, the wheel follows each fate, the
 * observer hears of them, and fired ids the claim passed by are looked at
 * again (recheck).
 */
export class Executor implements LifecycleService {
  private readonly queue = new ClaimQueue();
  private readonly notes = new NoteKeeper();
  /** Fired ids a claim passed by once and that were put straight back (see recheck). */
  private readonly missedOnce = new Set<TaskId>();
  private inFlight = 0;
  /** Of those, the gate's claims (one limited task each). */
  private gatedInFlight = 0;
  private aloneInFlight = false;
  /** Rate credits being stamped after their starts. */
  private readonly stamps = new Set<Promise<void>>();
  private stopped = false;
  private roomWaiters: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];
  private readonly batch: ClaimBatch;
  readonly stats = new ExecutionStats();
  /** Where tasks of limited or paused types wait for their turn. */
  readonly gate: LimitGate;

  constructor(
    private readonly ctx: DelayContext,
    private readonly registry: HandlerRegistry,
    private readonly wheel: TaskWheel,
  ) {
    this.batch = new ClaimBatch(ctx, registry);
    this.gate = new LimitGate(
      ctx,
      registry,
      () => this.pump(),
      (ids) => this.enqueue(ids),
    );
  }

  /** Ids waiting for a claim transaction. */
  get queuedCount(): number {
    return this.queue.size;
  }

  /** Nothing queued, no claim transaction running, nothing in the gate that may start now. */
  get idle(): boolean {
    return this.queue.size === 0 && this.inFlight === 0 && !this.gate.hasReady;
  }

  async start(): Promise<void> {
    // Credits this instance left in flight under the same id before a restart.
    await reapCredits(this.ctx.db.pool, [this.ctx.options.instanceId]);
    await this.gate.start();
  }

  enqueue(ids: Iterable<TaskId>): void {
    if (this.stopped) return;
    this.queue.add(ids);
    this.pump();
  }

  /** Resolves once fewer than `size` ids wait in the queue (or on stop): a reader's back-pressure. */
  async room(size: number): Promise<void> {
    while (!this.stopped && this.queue.size >= size)
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  /**
   * Stops taking work and waits (up to shutdownTimeout) for the claims in
   * flight. Past that their connections are destroyed, which rolls their
   * transactions back: exactly what a crash would do, so those tasks stay
   * pending and run elsewhere once this instance's lease expires.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.clear();
    await this.gate.stop();
    this.wake(this.roomWaiters);
    this.wake(this.idleWaiters);
    const timeoutMs = this.ctx.options.shutdownTimeoutMs;
    if (await this.finishedWithin(timeoutMs)) {
      await Promise.allSettled([...this.stamps]);
      return;
    }
    this.ctx.logger.warn(
      `Handlers still running after ${timeoutMs} ms were cut off; their transactions rolled back, ` +
        `their tasks stay pending and go to another instance when the lease expires`,
    );
    await this.notes.cutOffAll(this.ctx.db.pool);
    await Promise.allSettled([...this.stamps]);
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

  private pump(): void {
    while (!this.stopped && !this.aloneInFlight) {
      if (this.queue.hasAlone) {
        // Wait for the claims in flight to end, then run it by itself.
        if (this.inFlight === 0) this.launch(this.queue.takeAlone(), true);
        return;
      }
      if (this.inFlight >= this.ctx.concurrency) return;
      // The gate's claims take turns with batches and never take every
      // worker: tasks of unlimited types always have a claim to go to.
      const gateRoom = this.gatedInFlight < Math.max(1, this.ctx.concurrency - 1);
      const gateTurn = gateRoom && (this.gatedInFlight === 0 || !this.queue.hasWaiting);
      const gated = gateTurn ? this.gate.next(this.inFlight === 0) : undefined;
      if (gated) {
        this.launch(
          gated.items.map((item) => item.id),
          gated.items[0].alone,
          gated,
        );
        continue;
      }
      if (!this.queue.hasWaiting) return;
      this.launch(this.queue.takeBatch(this.ctx.options.batchSize, this.ctx.concurrency), false);
    }
  }

  private launch(ids: TaskId[], alone: boolean, gated?: GateClaim): void {
    this.inFlight++;
    if (gated) this.gatedInFlight++;
    this.aloneInFlight = alone;
    const claim = () => (gated ? this.claimGated(gated) : this.claim(ids, alone));
    const { tracing } = this.ctx;
    void (tracing ? tracing.detached(claim) : claim()).finally(() => {
      this.queue.claimEnded(ids);
      this.inFlight--;
      if (gated) this.gatedInFlight--;
      if (alone) this.aloneInFlight = false;
      this.pump();
      this.wake(this.roomWaiters);
      if (this.idle) {
        this.queue.idle();
        this.wake(this.idleWaiters);
      }
    });
  }

  /**
   * A gate's claim of tasks of one line: rate credits first, in a statement
   * of their own (as many as free, up to one a task; none: the line waits
   * until one frees), then the claim, which takes one concurrency slot for
   * them all and runs them one after another, fenced, so that no handler
   * starts twice. Each credit is stamped once its handler has started; those
   * unused are put back.
   */
  private async claimGated(gated: GateClaim): Promise<void> {
    const { ctx } = this;
    const { line } = gated;
    const holder = ctx.options.instanceId;
    let outcome: GateOutcome = { kind: 'done' };
    let back: GateItem[] = [];
    let credits: TakenCredit[] | undefined;
    let used = 0;
    let items = gated.items;
    try {
      if (gated.effective.rate) {
        const answer = await takeCredits(
          ctx.db.pool,
          line.type,
          line.key,
          gated.declared.rate,
          holder,
          this.limitNowMs(),
          items.length,
        );
        this.gate.creditTaken(gated);
        if (!answer.unlimited) {
          credits = answer.taken;
          if (credits.length < items.length) {
            // The rest wait for the next credit to free.
            back = items.slice(credits.length);
            items = items.slice(0, credits.length);
            outcome = { kind: 'rate', nextFreeMs: answer.nextFreeMs };
          }
          if (items.length === 0) return;
        }
      }
      const taken = credits;
      const ended = await this.claim(
        items.map((item) => item.id),
        items[0].alone,
        gated,
        taken?.map((credit) => credit.credit),
        () => {
          const credit = taken?.[used++];
          if (credit) this.stamp(line.type, line.key, credit.credit);
        },
      );
      if (ended === 'cut-off') {
        if (outcome.kind !== 'rate') outcome = { kind: 'ran' };
      } else if (ended) {
        if (ended.held) {
          outcome = { kind: ended.held };
          back.push(...items);
        } else {
          if (outcome.kind !== 'rate' && ended.claimedIds.size > 0) outcome = { kind: 'ran' };
          // Cut off last time: again, alone.
          const deferred = new Set(ended.deferred);
          back.push(
            ...items
              .filter((item) => deferred.has(item.id))
              .map((item) => ({ ...item, alone: true })),
          );
        }
      }
    } catch (error) {
      ctx.logger.error(`Taking rate credits for ${line.type} failed: ${errorText(error)}`);
      this.holdAll(
        items.map((item) => item.id),
        this.retrySoonMs(),
      );
      back = [];
    } finally {
      for (const credit of credits?.slice(used) ?? [])
        await returnCredit(ctx.db.pool, line.type, line.key, credit, holder).catch(
          (error: unknown) =>
            ctx.logger.error(
              `Putting back an unused rate credit of ${line.type} failed (it frees when this instance restarts or is taken over): ${errorText(error)}`,
            ),
        );
      this.gate.ended(gated, outcome, back);
    }
  }

  /** Stamps a credit after its start; retried a few times, else left in flight (the safe side). */
  private stamp(type: string, key: string, credit: number): void {
    const { ctx } = this;
    const attempt = async (tries: number): Promise<void> => {
      try {
        await stampCredit(
          ctx.db.pool,
          type,
          key,
          credit,
          ctx.options.instanceId,
          this.limitNowMs(),
        );
      } catch (error) {
        if (tries >= 5 || this.stopped) {
          ctx.logger.error(
            `Stamping a rate credit of ${type} failed; it stays in use until this instance restarts or is taken over: ${errorText(error)}`,
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 200 * tries));
        await attempt(tries + 1);
      }
    };
    const stamping = attempt(1);
    this.stamps.add(stamping);
    void stamping.finally(() => this.stamps.delete(stamping));
  }

  /** The time limits are kept in: the database's (null) unless the module runs on a clock of a test's. */
  private limitNowMs(): number | null {
    return this.ctx.clock instanceof DatabaseClock ? null : this.ctx.clock.now();
  }

  /** One claim transaction on a connection of its own, and what follows it. */
  private async claim(
    ids: TaskId[],
    alone: boolean,
    gated?: GateClaim,
    credits?: number[],
    onStart?: () => void,
  ): Promise<BatchResult | 'cut-off' | undefined> {
    const { ctx } = this;
    let connection: ClaimConnection | undefined;
    let noteId: string | undefined;
    let result: BatchResult;
    let nowMs: number;
    let startedAt: number;
    try {
      connection = await claimConnection(ctx.db);
      startedAt = performance.now();
      // A stop that came while this waited for a connection has already cut off the others.
      if (this.stopped) return undefined;
      this.notes.lent(connection);
      nowMs = ctx.clock.now();
      await this.notes.forgetEarlier(connection.sql);
      // Committed before the claim begins (in the same round trip as its
      // BEGIN): survives the claim if it never commits.
      noteId = await recordAttemptAndBegin(
        connection,
        ctx.options.instanceId,
        ids,
        new Date(nowMs),
        this.batch.backstopMs,
      );
      this.notes.noted(connection, noteId);
      result = await this.batch.run(connection, ids, {
        nowMs,
        noteId,
        alone,
        gating: gated
          ? {
              line: {
                type: gated.line.type,
                key: gated.line.key,
                concurrency: gated.declared.concurrency,
                credits: credits && { credits, holder: ctx.options.instanceId },
              },
            }
          : { declared: this.gate.declaredTypes() },
        // A gate's tasks run fenced from the start: a failure never starts a handler twice.
        fenced: gated !== undefined,
        onStart,
      });
    } catch (error) {
      if (error instanceof HandlerCutOff && noteId !== undefined && !this.stopped) {
        await this.chargeCutOff(error, noteId, ids);
        return 'cut-off';
      }
      // Its session may still hold the note's lock, or be broken: close it rather than reuse it.
      connection?.cutOff();
      // Failed as a whole (or stopped): no task's fault, so its note goes, once
      // the closed session has let go of it.
      if (noteId !== undefined) await this.notes.forgetOnceReleased(ctx.db.pool, noteId);
      if (this.stopped) return undefined;
      ctx.logger.error(
        `Claim transaction for ${ids.length} task(s) failed, retrying them shortly: ${errorText(error)}`,
      );
      // Nothing committed: every id is still pending in the database.
      this.holdAll(ids, this.retrySoonMs());
      return undefined;
    } finally {
      if (connection) {
        this.notes.returned(connection);
        await connection.release();
      }
    }
    this.stats.record(result);
    // Time a gate's task waited for its limit is not the engine's lateness.
    const limitWaits = gated
      ? new Map(gated.items.map((item) => [item.id, Math.max(0, nowMs - item.sinceMs)]))
      : undefined;
    reportBatch(ctx.observer, result, ids.length, nowMs, performance.now() - startedAt, limitWaits);
    for (const fate of result.fates) this.follow(fate);
    for (const id of result.claimedIds) this.missedOnce.delete(id);
    if (result.gated.length > 0) this.gate.add(result.gated);
    // A gate's deferred and held tasks go back to its line (claimGated).
    if (!gated) for (const id of result.deferred) this.queueAlone(id);
    if (result.held) return result;
    const passed = new Set([...result.deferred, ...result.gated.map((row) => row.id)]);
    const missing = ids.filter((id) => !result.claimedIds.has(id) && !passed.has(id));
    if (missing.length > 0) await this.recheck(missing);
    return result;
  }

  /** The wheel follows a fate: a task pending again is held here if leased here. */
  private follow(fate: Fate): void {
    if (fate.transition === 'retry' || fate.transition === 'snooze')
      this.wheel.followLease(fate.row.id, fate.dueAtMs, fate.lockedBy);
    else if (fate.transition !== 'complete') this.wheel.release(fate.row.id);
  }

  private queueAlone(id: TaskId): void {
    if (this.stopped) return;
    this.queue.addAlone(id);
    this.pump();
  }

  /**
   * A handler ignored its timeout and its claim was cut off: every effect of
   * the batch rolled back. Its attempt is charged (retried with backoff, or
   * exhausted); its batch-mates were never at fault and run again now.
   */
  private async chargeCutOff(cut: HandlerCutOff, noteId: string, ids: TaskId[]): Promise<void> {
    const { ctx } = this;
    const { row } = cut;
    const nowMs = ctx.clock.now();
    const retryAtMs = nowMs + retryDelayMs(this.registry.backoffOf(row.type), row.attempts);
    // The claim that counted this attempt rolled back: charge it on the row as it is.
    const before = { ...row, attempts: row.attempts - 1 };
    const change = charge(before, 1, cut.message, retryAtMs, nowMs, ctx.policy);
    ctx.logger.error(`Task ${row.id} (${row.type}): ${cut.message}`);
    try {
      const charged = await writeCharge(ctx.db.pool, change, new Date(nowMs), noteId);
      if (charged) {
        const fate: Fate = { ...change, row };
        this.stats.recordOne(fate);
        reportFate(ctx.observer, fate, nowMs);
        this.follow(fate);
      } else {
        // The row was not as claimed (a charge in the same claim rolled back
        // with it): its note stays, dead, and the task's next claim, alone,
        // charges what the table says. Claimed again soon, not stranded.
        this.wheel.hold(row.id, this.retrySoonMs());
      }
    } catch (error) {
      // Uncharged, rather than let its note charge the batch-mates below as well.
      this.notes.forgetLater(noteId);
      ctx.logger.error(`Charging the cut-off task ${row.id} failed: ${errorText(error)}`);
    }
    // Their claim is over: they may be queued again at once.
    this.queue.claimEnded(ids);
    this.enqueue(ids.filter((id) => id !== row.id));
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
      this.holdAll(ids, this.retrySoonMs());
      this.ctx.logger.error(
        `Rechecking ${ids.length} unclaimed task(s) failed, trying again shortly: ${errorText(error)}`,
      );
    }
  }

  private retrySoonMs(): number {
    return this.ctx.clock.now() + Math.max(this.ctx.options.tickMs, FAILED_CLAIM_RETRY_MIN_MS);
  }

  private holdAll(ids: TaskId[], dueAtMs: number): void {
    for (const id of ids) this.wheel.hold(id, dueAtMs);
  }
}
