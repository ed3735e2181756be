import {
  DueQueue,
  TimingWheel,
  wheelCensus,
  type DueEntry,
  type EntryId,
  type WheelCensus,
} from '../wheel/index.js';
import type { Clock, TimerHandle } from '../clock/index.js';
import { HANDOUT } from '../context/tuning.js';
import type { TaskId } from '../task.types.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import { errorText } from '../delay.messages.js';
import type { CallerTransaction } from '../store/caller-transaction.js';
import { stateOf, type TaskRow } from '../tasks/task-row.js';
import type { Fate } from '../tasks/task-transitions.js';

/** Decimal digits that always make a safe integer, with no leading zero. */
const SAFE_DECIMAL = /^(?:0|[1-9][0-9]{0,14})$/;

/** The wheel's key for a task id: the number, when the id is a plain decimal (Postgres' bigint ids are), else the string (one more heap object an entry). */
function keyOf(id: TaskId): EntryId {
  return SAFE_DECIMAL.test(id) ? Number(id) : id;
}

/** A fired task: its id and, when the hold knew it, its type (the dispatcher routes by it). */
export interface FiredTask {
  id: TaskId;
  type: string | undefined;
}

/**
 * This instance's tasks due within its window, in memory: the timing wheel,
 * the queue where the next tick's tasks wait for their exact time, and the
 * driver (below) that moves both with the clock. Fired tasks go to `fire`
 * (the dispatcher); no task work runs on the timer. Each entry keeps its
 * task's type, interned: a reference to the one string of its type.
 */
export class TaskWheel implements LifecycleService {
  private readonly wheel: TimingWheel<string | undefined>;
  private readonly queue = new DueQueue<string | undefined>();
  private readonly driver: TickDriver<string | undefined>;
  /** Each type once: entries hold these references, not the strings rows came with. */
  private readonly types = new Map<string, string>();
  private started = false;

  constructor(
    private readonly ctx: DelayContext,
    private readonly fire: (tasks: FiredTask[]) => void,
  ) {
    this.wheel = new TimingWheel({
      slots: ctx.options.slots,
      tickMs: ctx.options.tickMs,
      startMs: ctx.clock.now(),
    });
    this.driver = new TickDriver({
      wheel: this.wheel,
      queue: this.queue,
      clock: ctx.clock,
      onDue: (entries) =>
        this.fire(entries.map((entry) => ({ id: String(entry.id), type: entry.value }))),
      onError: (error) => ctx.logger.error(`Tick failed: ${errorText(error)}`),
    });
  }

  /** Tasks held. */
  get size(): number {
    return this.wheel.size + this.queue.size;
  }

  has(id: TaskId): boolean {
    const key = keyOf(id);
    return this.wheel.has(key) || this.queue.has(key);
  }

  async start(): Promise<void> {
    this.started = true;
    this.driver.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.driver.stop();
    this.wheel.clear();
    this.queue.clear();
  }

  /**
   * Holds a task of `type` to fire at `dueAtMs` (moving it if held); a task
   * past the window is let go. No `type`: the one it is held with, if any (a
   * claim failed as a whole knows its ids only); fired with none, a plain
   * claim sends it to the gate if its type is limited.
   */
  hold(id: TaskId, dueAtMs: number, type?: string): void {
    const key = keyOf(id);
    const known = type === undefined ? (this.wheel.get(key) ?? this.queue.get(key))?.value : type;
    this.queue.cancel(key);
    if (!this.ctx.policy.isWithinWindow(dueAtMs, this.ctx.clock.now())) {
      this.wheel.cancel(key);
      return;
    }
    this.wheel.add(key, dueAtMs, known === undefined ? undefined : this.intern(known));
    if (this.started) this.driver.poke(dueAtMs);
  }

  /** Like hold, but never later than it already is (the hold rules below say when). */
  holdNoLaterThan(id: TaskId, dueAtMs: number, type: string): void {
    const key = keyOf(id);
    const current = this.wheel.get(key) ?? this.queue.get(key);
    if (current && current.dueAtMs <= dueAtMs) return;
    this.hold(id, dueAtMs, type);
  }

  private intern(type: string): string {
    if (!this.types.has(type)) this.types.set(type, type);
    return this.types.get(type)!;
  }

  /** No longer held here (it ran, was cancelled, or is leased elsewhere): the lease is another matter. */
  drop(id: TaskId): void {
    const key = keyOf(id);
    if (!this.wheel.cancel(key)) this.queue.cancel(key);
  }

  /** A picture of the ring, in regions of `regionSlots` slots (see wheelCensus); the due queue's tick aside. */
  census(regionSlots: number): WheelCensus {
    return wheelCensus(this.wheel, regionSlots);
  }

  /** Fires what is due by now, without waiting for the timer (tests). */
  turnNow(): number {
    return this.driver.runDue(this.ctx.clock.now());
  }
}

// ---------------------------------------------------------------- the tick driver
export interface TickDriverOptions<V> {
  wheel: TimingWheel<V>;
  /** Where entries wait, taken out of the wheel up to a tick ahead, for their exact time. */
  queue: DueQueue<V>;
  clock: Clock;
  /** Receives each non-empty batch, earliest first. Runs on the timer: hand work off, don't do it. */
  onDue: (entries: DueEntry<V>[]) => void;
  /** Called with whatever `onDue` throws; the driver keeps going either way. */
  onError?: (error: unknown) => void;
  /** Ticks per `advance` call before yielding to the event loop while catching up. */
  maxTicksPerBatch?: number;
}

/**
 * Fires each entry at its own due time, never before. The wheel places
 * entries cheaply, however far ahead and however many; as a tick draws near
 * (within one tick of it) its entries move to the due queue, ordered by time,
 * and one timer is armed for the earliest. So the tick sets how far ahead the
 * wheel lets go, not when things fire, and the clock is read only on a wake.
 * As in Netty's HashedWheelTimer, a wake after a stall processes every tick
 * it missed, in order, yielding between batches; it never runs task work.
 */
export class TickDriver<V> {
  private readonly wheel: TimingWheel<V>;
  private readonly queue: DueQueue<V>;
  private readonly maxTicksPerBatch: number;
  private isRunning = false;
  /** From a wake until it sleeps again: the loop re-arms when done. */
  private processing = false;
  private timer: TimerHandle | undefined;
  private immediate: ReturnType<typeof setImmediate> | undefined;
  private armedAt: number | undefined;

  constructor(private readonly options: TickDriverOptions<V>) {
    ({ wheel: this.wheel, queue: this.queue } = options);
    this.maxTicksPerBatch = options.maxTicksPerBatch ?? 1000;
  }

  get running(): boolean {
    return this.isRunning;
  }

  start(): void {
    if (this.isRunning) return;
    this.isRunning = true;
    this.sleep();
  }

  /** Cancels the timer and any pending catch-up batch: nothing fires after this returns. */
  stop(): void {
    this.isRunning = false;
    this.processing = false;
    this.disarm();
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.immediate = undefined;
  }

  /** Tells the driver an entry due at `dueAtMs` was just added, in case it sleeps past it. */
  poke(dueAtMs: number): void {
    // Mid-batch or catching up, the loop re-arms when done (a timer now could start a second loop).
    if (!this.isRunning || this.processing) return;
    const at = this.wakeFor(dueAtMs);
    if (this.armedAt === undefined || at < this.armedAt) this.arm(at);
  }

  /**
   * Hands out what is due by `nowMs` now, whatever the timer is waiting for
   * (tests that move a ManualClock call this to settle). Returns how many.
   */
  runDue(nowMs: number): number {
    this.take(nowMs);
    const due = this.queue.popDue(nowMs);
    if (due.length > 0) this.guard(due);
    if (this.isRunning && !this.processing) this.sleep();
    return due.length;
  }

  /** Moves the entries of the ticks within one tick of `nowMs` to the queue; returns that horizon. */
  private take(nowMs: number, maxTicks = Infinity): number {
    const horizon = nowMs + this.wheel.tickMs;
    for (const entry of this.wheel.advance(horizon, maxTicks)) this.queue.push(entry);
    return horizon;
  }

  /** An entry leaves the wheel for the queue once its tick is within one tick of now. */
  private wakeFor(dueAtMs: number): number {
    return this.wheel.deadlineOf(this.wheel.dueTickOf(dueAtMs)) - this.wheel.tickMs;
  }

  private sleep(): void {
    const nextTick = this.wheel.nextDueTick();
    const nextInQueue = this.queue.peekDueAtMs();
    // Nothing held needs no timer at all: idle costs nothing, and poke() wakes us.
    let at = nextInQueue ?? Infinity;
    if (nextTick !== undefined)
      at = Math.min(at, this.wheel.deadlineOf(nextTick) - this.wheel.tickMs);
    if (at === Infinity) this.disarm();
    else this.arm(at);
  }

  private arm(at: number): void {
    this.disarm();
    this.armedAt = at;
    this.timer = this.options.clock.setTimer(at, () => {
      this.timer = undefined;
      this.armedAt = undefined;
      this.processing = true;
      this.runBatch();
    });
  }

  private disarm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.armedAt = undefined;
  }

  private runBatch(): void {
    this.immediate = undefined;
    if (!this.processing) return;
    const now = this.options.clock.now();
    const horizon = this.take(now, this.maxTicksPerBatch);
    const due = this.queue.popDue(now, HANDOUT);
    if (due.length > 0) this.guard(due);
    if (!this.processing) return; // onDue stopped us (and maybe restarted: that loop goes on)
    const moreDue = due.length === HANDOUT && (this.queue.peekDueAtMs() ?? Infinity) <= now;
    if (moreDue || this.wheel.currentTick < this.wheel.tickOf(horizon)) {
      // A burst, or behind after a stall: yield so the first claims start, then hand out the rest.
      this.immediate = setImmediate(() => this.runBatch());
    } else {
      this.processing = false;
      this.sleep();
    }
  }

  /** Runs the caller's onDue; nothing it throws may stop the driver. */
  private guard(due: DueEntry<V>[]): void {
    try {
      this.options.onDue(due);
    } catch (error) {
      try {
        this.options.onError?.(error);
      } catch {
        /* reporting failed too: the driver must outlive both */
      }
    }
  }
}

// ---------------------------------------------------------------- the hold rules
/**
 * Which tasks this instance's wheel holds, and until when: every rule that
 * follows a write, a fate or a cancel, in one file (the loader, the stranded
 * sweep and a claim's retries hold what they leased, at its due time). Every
 * hold names the task's type, which the rows read here all carry: the
 * dispatcher sends a fired task of a limited type to the gate by it.
 *
 * The wheel holds a pending task of a type handled here, due within the
 * window, while it is leased here. One exception: a task written in a
 * caller's transaction is unleased until that commits, so it is held early,
 * never later than its due time, and again at the commit (a hold that fired
 * before the commit found no row, and its claim let it go). Anything else is
 * let go: its lease, if any, says who runs it. Holding a task not ours is
 * harmless (its claim finds it leased elsewhere); dropping one that is ours
 * leaves it held nowhere: no loader takes a leased task, only the safety net
 * (lease/stranded-sweep.ts) or a takeover.
 *
 * The invariant: a pending task leased to a running instance is in its
 * wheel, its claim queue, a claim of its, or its limit gate. So a lease is
 * written only where a hold follows: never for a type not handled here;
 * never by a write that commits after this instance handed its tasks back
 * (its stop waits for the writes under way); and a claim's fate never lets
 * go of an entry a newer write put back (followFate).
 */
type Holds = Pick<DelayContext, 'policy' | 'clock' | 'afterCommit'>;

/** A row DelayService just wrote or found (schedule, reschedule, revive). */
export function followWrite(
  wheel: TaskWheel,
  ctx: Holds,
  row: TaskRow,
  caller: CallerTransaction | undefined,
): void {
  const { policy } = ctx;
  if (stateOf(row) !== 'pending') return;
  // Another instance's to run (see WindowPolicy.handles).
  if (!policy.handles(row.type)) return wheel.drop(row.id);
  const dueAtMs = row.due_at.getTime();
  if (caller) holdUncommitted(wheel, ctx, caller, row.id, dueAtMs, row.type);
  else if (policy.holds(row.locked_by)) wheel.hold(row.id, dueAtMs, row.type);
  else if (row.locked_by !== null) wheel.drop(row.id);
  // Unleased and committed: a hold it has (an earlier caller's write) moves with it.
  else if (wheel.has(row.id)) wheel.hold(row.id, dueAtMs, row.type);
}

/**
 * Rows scheduleMany inserted, leased by its statement whatever their type:
 * one of a type not handled here is held all the same, and its claim hands
 * the lease back (the claim's `unhandled` verdict).
 */
export function followBulkWrite(
  wheel: TaskWheel,
  ctx: Holds,
  rows: readonly { id: TaskId; due_at: Date; locked_by: string | null; type: string }[],
  caller: CallerTransaction | undefined,
): void {
  for (const row of rows) {
    const dueAtMs = row.due_at.getTime();
    if (caller) holdUncommitted(wheel, ctx, caller, row.id, dueAtMs, row.type);
    else if (ctx.policy.holds(row.locked_by)) wheel.hold(row.id, dueAtMs, row.type);
  }
}

/**
 * A task cancelled. In a caller's transaction the cancel may roll back: the
 * wheel is left alone, and the claim finds the task cancelled (or not).
 */
export function followCancel(
  wheel: TaskWheel,
  id: TaskId,
  caller: CallerTransaction | undefined,
): void {
  if (!caller) wheel.drop(id);
}

/**
 * A claim's fate: a task pending again and leased here is held here. Nothing
 * is let go: the task left the wheel when it fired, so an entry found now
 * was put back while its claim ran, by a write of this instance at least as
 * new as the fate (a revive or reschedule that waited for the claim's lock,
 * its reply read first): letting go of it would leave the task leased here
 * and held nowhere, while a stale one costs only a claim that finds it done.
 */
export function followFate(wheel: TaskWheel, ctx: Pick<Holds, 'policy'>, fate: Fate): void {
  const pendingAgain = fate.transition === 'retry' || fate.transition === 'snooze';
  if (pendingAgain && ctx.policy.holds(fate.lockedBy))
    wheel.hold(fate.row.id, fate.dueAtMs, fate.row.type);
}

/**
 * A write in the caller's transaction: held now, no later than its due time
 * (fired early, the claim sorts it out), and again when it commits. A
 * transaction TypeORM does not report (a raw BEGIN, or another ORM's
 * `transaction` given without `afterCommit`) still has the loader's round.
 */
function holdUncommitted(
  wheel: TaskWheel,
  { policy, clock, afterCommit }: Holds,
  caller: CallerTransaction,
  id: TaskId,
  dueAtMs: number,
  type: string,
): void {
  const holdIfRunning = () => {
    if (policy.isRunning && policy.isWithinWindow(dueAtMs, clock.now()))
      wheel.holdNoLaterThan(id, dueAtMs, type);
  };
  holdIfRunning();
  afterCommit.run(caller, holdIfRunning);
}
