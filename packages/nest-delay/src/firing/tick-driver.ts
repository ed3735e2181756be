import type { Clock, TimerHandle } from '../clock/index.js';
import type { DueEntry, DueQueue, TimingWheel } from '../wheel/index.js';
import { HANDOUT } from '../context/tuning.js';

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
  private readonly clock: Clock;
  private readonly onDue: (entries: DueEntry<V>[]) => void;
  private readonly onError?: (error: unknown) => void;
  private readonly maxTicksPerBatch: number;

  private isRunning = false;
  /** From a wake until it sleeps again: the loop re-arms when done. */
  private processing = false;
  private timer: TimerHandle | undefined;
  private immediate: ReturnType<typeof setImmediate> | undefined;
  private armedAt: number | undefined;

  constructor(options: TickDriverOptions<V>) {
    const { maxTicksPerBatch = 1000 } = options;
    if (!Number.isInteger(maxTicksPerBatch) || maxTicksPerBatch < 1) {
      throw new RangeError(`maxTicksPerBatch must be a positive integer; got ${maxTicksPerBatch}`);
    }
    this.wheel = options.wheel;
    this.queue = options.queue;
    this.clock = options.clock;
    this.onDue = options.onDue;
    this.onError = options.onError;
    this.maxTicksPerBatch = maxTicksPerBatch;
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
    // Mid-batch or catching up, the loop re-arms when done; a timer armed
    // now could start a second loop alongside it.
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
    this.timer = this.clock.setTimer(at, () => {
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
    const now = this.clock.now();
    const horizon = this.take(now, this.maxTicksPerBatch);
    const due = this.queue.popDue(now, HANDOUT);
    if (due.length > 0) this.guard(due);
    if (!this.processing) return; // onDue stopped us (and maybe restarted: that loop goes on)
    const moreDue = due.length === HANDOUT && (this.queue.peekDueAtMs() ?? Infinity) <= now;
    if (moreDue || this.wheel.currentTick < this.wheel.tickOf(horizon)) {
      // A burst, or behind after a stall: yield so the first claims start
      // (and I/O is not starved), then hand out the rest.
      this.immediate = setImmediate(() => this.runBatch());
    } else {
      this.processing = false;
      this.sleep();
    }
  }

  /** Runs the caller's onDue; nothing it throws may stop the driver. */
  private guard(due: DueEntry<V>[]): void {
    try {
      this.onDue(due);
    } catch (error) {
      try {
        this.onError?.(error);
      } catch {
        // Reporting failed too; the driver must outlive both.
      }
    }
  }
}
