import type { FiredTask, TaskWheel } from '../firing/task-wheel.js';
import type { HandlerRegistry } from '../handler-registry.js';
import { GateClaims } from '../limits/gate-claims.js';
import { LimitGate, type GateClaim } from '../limits/limit-gate.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import type { TaskId } from '../task.types.js';
import type { ExecutionStats } from '../observer/observer-calls.js';
import { ClaimRunner, type ClaimHost } from './claim-runner.js';

/**
 * Decides what runs when. Tasks fired by the wheel (or read by the backlog
 * drainer) of a type limited or paused here go to the limit gate, which
 * claims them itself; the rest wait in the claim queue in due order, and
 * claim transactions take them a batch at a time, each on a connection of
 * its own (ClaimRunner runs one). What holds:
 * - at most `concurrency` claims are in flight, the gate's included; while
 *   ids wait and fewer are in flight, another is launched at once, with
 *   every id waiting (up to a batch): ids fired together go in one claim;
 * - a task that may only run alone waits for every claim in flight to end
 *   and runs by itself: nothing else is launched until it ends;
 * - tasks of limited or paused types wait in the limit gate; its claims
 *   take turns with the batches and, with more than one worker, never take
 *   them all.
 */
export class Dispatcher implements LifecycleService, ClaimHost {
  private readonly queue = new ClaimQueue();
  private inFlight = 0;
  /** Of those, the gate's claims (one line's tasks each). */
  private gatedInFlight = 0;
  private aloneInFlight = false;
  /** The last claim launched was the gate's: a batch waiting goes next (turns). */
  private gateWentLast = false;
  private _stopped = false;
  private roomWaiters: Array<() => void> = [];
  private idleWaiters: Array<() => void> = [];
  private readonly runner: ClaimRunner;
  private readonly gateClaims: GateClaims;
  /** Where tasks of limited or paused types wait for their turn. */
  readonly gate: LimitGate;

  constructor(
    private readonly ctx: DelayContext,
    registry: HandlerRegistry,
    wheel: TaskWheel,
  ) {
    this.gate = new LimitGate(
      ctx,
      registry,
      () => this.pump(),
      (ids) => this.enqueue(ids),
      () => this.queue.size,
    );
    this.runner = new ClaimRunner(ctx, registry, wheel, this.gate, this);
    this.gateClaims = new GateClaims(ctx, this.gate, this.runner);
  }

  get stopped(): boolean {
    return this._stopped;
  }

  get stats(): ExecutionStats {
    return this.runner.stats;
  }

  /** Ids waiting for a claim transaction. */
  get queuedCount(): number {
    return this.queue.size;
  }

  /** A full batch waits for a claim: this instance is behind (the safety net waits meanwhile). */
  get behind(): boolean {
    return this.queue.size >= this.ctx.options.batchSize;
  }

  /** Queued, in a claim, or in the limit gate (its type's tasks shed count: the gate reads them back). */
  accounts(id: TaskId, type: string): boolean {
    return this.queue.has(id) || this.gate.accounts(id, type);
  }

  /** A rate credit's stamp is under way: it may let a line waiting on it ask (a test's settle waits). */
  get stamping(): boolean {
    return this.gateClaims.stamping;
  }

  /** Nothing queued, no claim transaction running, nothing in the gate that may start now. */
  get idle(): boolean {
    return this.queue.size === 0 && this.inFlight === 0 && !this.gate.hasReady;
  }

  async start(): Promise<void> {
    await this.gateClaims.start();
    await this.gate.start();
  }

  /** Fired tasks: to the gate if their type is limited or paused, else (or type unknown) to the queue. */
  fire(tasks: readonly FiredTask[]): void {
    if (this._stopped) return;
    const plain: TaskId[] = [];
    const gated: TaskId[] = [];
    for (const { id, type } of tasks)
      (type !== undefined && this.gate.gates(type) ? gated : plain).push(id);
    if (gated.length > 0) this.gate.take(gated);
    if (plain.length > 0) this.enqueue(plain);
  }

  enqueue(ids: Iterable<TaskId>): void {
    if (this._stopped) return;
    this.queue.add(ids);
    this.pump();
  }

  queueAlone(id: TaskId): void {
    if (this._stopped) return;
    this.queue.addAlone(id);
    this.pump();
  }

  claimEnded(ids: TaskId[]): void {
    this.queue.claimEnded(ids);
  }

  /**
   * Resolves once fewer than `size` ids wait in the queue and in the gate's
   * lines that may start now (or on stop): a reader's back-pressure. Lines
   * that wait (paused, a rate, seats held elsewhere) do not count: they would
   * hold up every other type's backlog; the gate sheds what it cannot hold.
   */
  async room(size: number): Promise<void> {
    while (!this._stopped && this.queue.size + this.gate.readySize >= size)
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
  }

  /**
   * Forgets the tasks queued and those waiting in the gate: DelayTester.reset
   * deleted them. A claim in flight ends as it would (it finds its tasks gone).
   */
  forgetWaiting(): Promise<void> {
    this.queue.clear();
    return this.gate.forget();
  }

  /**
   * Stops taking work and waits (up to shutdownTimeout) for the claims in
   * flight. Past that their connections are destroyed, which rolls their
   * transactions back: exactly what a crash would do, so those tasks stay
   * pending and run elsewhere once this instance's lease expires.
   */
  async stop(): Promise<void> {
    this._stopped = true;
    this.queue.clear();
    await this.gate.stop();
    this.wake(this.roomWaiters);
    this.wake(this.idleWaiters);
    const timeoutMs = this.ctx.options.shutdownTimeoutMs;
    if (!(await this.finishedWithin(timeoutMs))) {
      this.ctx.logger.warn(
        `Handlers still running after ${timeoutMs} ms were cut off; their transactions rolled back, ` +
          `their tasks stay pending and go to another instance when the lease expires`,
      );
      await this.runner.cutOffAll();
    }
    await this.gateClaims.stop();
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
    // The gate's ready lines count in the room: it changes with them too.
    this.wake(this.roomWaiters);
    while (!this._stopped && !this.aloneInFlight) {
      if (this.queue.hasAlone) {
        // Wait for the claims in flight to end, then run it by itself.
        if (this.inFlight === 0) this.launch(this.queue.takeAlone(), true);
        return;
      }
      const { concurrency } = this.ctx;
      if (this.inFlight >= concurrency) return;
      // The gate's claims take turns with batches: after a gate's claim, a
      // batch waiting goes first. With more than one worker they never take
      // them all, so tasks of unlimited types always have one to go to; with
      // one, turns are what keeps them from waiting behind every gate claim.
      const gateRoom = concurrency === 1 || this.gatedInFlight < concurrency - 1;
      const gateTurn =
        gateRoom &&
        !(this.gateWentLast && this.queue.hasWaiting) &&
        (this.gatedInFlight === 0 || !this.queue.hasWaiting);
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
      // Not spread over the free workers: the server pays for a claim (its
      // note, BEGIN, statement and COMMIT) about as much for one task as for
      // several.
      this.launch(this.queue.takeBatch(this.ctx.options.batchSize), false);
    }
  }

  private launch(ids: TaskId[], alone: boolean, gated?: GateClaim): void {
    this.inFlight++;
    this.gateWentLast = gated !== undefined;
    if (gated) this.gatedInFlight++;
    this.aloneInFlight = alone;
    const claim = () =>
      gated ? this.gateClaims.run(gated) : this.runner.run(ids, alone).then(() => undefined);
    const { tracing } = this.ctx;
    void (tracing ? tracing.detached(claim) : claim()).finally(() => {
      this.queue.claimEnded(ids);
      this.inFlight--;
      if (gated) this.gatedInFlight--;
      if (alone) this.aloneInFlight = false;
      this.gate.roomFreed();
      this.pump();
      if (this.idle) {
        this.queue.idle();
        this.wake(this.idleWaiters);
      }
    });
  }
}

/**
 * Fired ids waiting for a claim, in the order they fired (due order), and the
 * size of the next batch. Two lines: most ids wait in `waiting`; a task that
 * may only run alone (its last attempt was cut off) waits in `alone`, for a
 * claim of its own with no other claim in flight, ahead of the rest.
 */
export class ClaimQueue {
  private waiting: TaskId[] = [];
  private head = 0;
  private readonly queued = new Set<TaskId>();
  private alone: TaskId[] = [];
  /**
   * Ids in a claim under way. Not queued again meanwhile: a second claim of
   * one could not lock it anyway, but its note would list it, and if the
   * process died then, the task would be charged twice for one death.
   */
  private readonly inClaim = new Set<TaskId>();
  /**
   * Ids added again while in a claim: queued once that claim ends. The claim
   * may have looked at the row before what fired it again (a caller's commit,
   * a recheck's hold), so it is not trusted to account for it.
   */
  private readonly again = new Set<TaskId>();
  /** Batches taken since the queue was last idle: the ramp of batch sizes (see takeBatch). */
  private takenSinceIdle = 0;

  /** Ids waiting for a claim. */
  get size(): number {
    return this.waiting.length - this.head + this.alone.length;
  }

  get hasAlone(): boolean {
    return this.alone.length > 0;
  }

  get hasWaiting(): boolean {
    return this.waiting.length > this.head;
  }

  /** Queues ids not already waiting or in a claim. */
  add(ids: Iterable<TaskId>): void {
    for (const id of ids) {
      if (this.queued.has(id)) continue;
      if (this.inClaim.has(id)) {
        this.again.add(id);
        continue;
      }
      this.queued.add(id);
      this.waiting.push(id);
    }
  }

  addAlone(id: TaskId): void {
    this.alone.push(id);
  }

  /**
   * The next batch: every id waiting, up to `batchSize`. A burst (more than a
   * full batch waiting) starts from idle at one task a batch and doubles
   * (1, 2, 4, ...): its first task commits after a handful of round trips,
   * not after batchSize effects.
   */
  takeBatch(batchSize: number): TaskId[] {
    const waiting = this.waiting.length - this.head;
    const ramp = waiting > batchSize ? 2 ** Math.min(this.takenSinceIdle, 30) : batchSize;
    this.takenSinceIdle++;
    const size = Math.min(batchSize, ramp, waiting);
    const batch = this.waiting.slice(this.head, this.head + size);
    this.head += batch.length;
    if (this.head > 4096 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    for (const id of batch) this.queued.delete(id);
    return this.claiming(batch);
  }

  takeAlone(): TaskId[] {
    return this.claiming([this.alone.shift() as TaskId]);
  }

  /** Their claim is over: they may be queued again, and those added meanwhile are. */
  claimEnded(ids: TaskId[]): void {
    const again: TaskId[] = [];
    for (const id of ids) {
      if (!this.inClaim.delete(id)) continue;
      if (this.again.delete(id)) again.push(id);
    }
    this.add(again);
  }

  /** Waiting for a claim, or in one: accounted for (the safety net asks). */
  has(id: TaskId): boolean {
    return this.queued.has(id) || this.inClaim.has(id) || this.alone.includes(id);
  }

  /** Nothing waits and no claim runs: the next burst ramps up from one again. */
  idle(): void {
    this.takenSinceIdle = 0;
  }

  clear(): void {
    this.waiting = [];
    this.head = 0;
    this.alone = [];
    this.queued.clear();
    this.again.clear();
  }

  private claiming(ids: TaskId[]): TaskId[] {
    for (const id of ids) this.inClaim.add(id);
    return ids;
  }
}
