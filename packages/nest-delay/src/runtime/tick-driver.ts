import type { Clock, TimerHandle } from '../clock/index.js';
import type { DueEntry, TimingWheel } from '../wheel/index.js';

export interface TickDriverOptions<V> {
  wheel: TimingWheel<V>;
  clock: Clock;
  /** Receives each non-empty batch, earliest first. Runs on the tick: hand work off, don't do it. */
  onDue: (entries: DueEntry<V>[]) => void;
  /** Called with whatever `onDue` or `onWake` throws; the driver keeps going either way. */
  onError?: (error: unknown) => void;
  /** Called on each timer wake with the deadline it was armed for and the time it woke. */
  onWake?: (deadlineMs: number, nowMs: number) => void;
  /** Ticks per `advance` call before yielding to the event loop while catching up. */
  maxTicksPerBatch?: number;
}

/**
 * Drives a TimingWheel from a Clock, the way Netty's HashedWheelTimer worker does: it sleeps
 * until the deadline of the next tick that has work, computed from the fixed origin
 * (tick × tickMs) rather than as "now + interval", so lateness never accumulates; on
 * waking it processes every tick it missed, in order; it never runs task work itself.
 */
export class TickDriver<V> {
  private readonly wheel: TimingWheel<V>;
  private readonly clock: Clock;
  private readonly onDue: (entries: DueEntry<V>[]) => void;
  private readonly onError?: (error: unknown) => void;
  private readonly onWake?: (deadlineMs: number, nowMs: number) => void;
  private readonly maxTicksPerBatch: number;

  private isRunning = false;
  /** From a wake until it sleeps again: the loop re-arms from the wheel when done. */
  private processing = false;
  private timer: TimerHandle | undefined;
  private immediate: ReturnType<typeof setImmediate> | undefined;
  private armedDeadline: number | undefined;
  private lastArmed: number | undefined;

  constructor(options: TickDriverOptions<V>) {
    const { maxTicksPerBatch = 1000 } = options;
    if (!Number.isInteger(maxTicksPerBatch) || maxTicksPerBatch < 1) {
      throw new RangeError(`maxTicksPerBatch must be a positive integer; got ${maxTicksPerBatch}`);
    }
    this.wheel = options.wheel;
    this.clock = options.clock;
    this.onDue = options.onDue;
    this.onError = options.onError;
    this.onWake = options.onWake;
    this.maxTicksPerBatch = maxTicksPerBatch;
  }

  get running(): boolean {
    return this.isRunning;
  }

  /** The last deadline a timer was armed for; always a multiple of the wheel's tickMs. */
  get lastDeadline(): number | undefined {
    return this.lastArmed;
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
    // Mid-batch or catching up, the loop re-arms from the wheel (which knows the entry)
    // when done; a timer armed now could start a second loop alongside it.
    if (!this.isRunning || this.processing) return;
    const deadline = this.wheel.deadlineOf(this.wheel.dueTickOf(dueAtMs));
    if (this.armedDeadline === undefined || deadline < this.armedDeadline) this.arm(deadline);
  }

  private sleep(): void {
    const tick = this.wheel.nextDueTick();
    // An empty wheel needs no timer at all: idle costs nothing, and poke() wakes us.
    if (tick === undefined) this.disarm();
    else this.arm(this.wheel.deadlineOf(tick));
  }

  private arm(deadline: number): void {
    this.disarm();
    this.armedDeadline = deadline;
    this.lastArmed = deadline;
    this.timer = this.clock.setTimer(deadline, () => {
      this.timer = undefined;
      this.armedDeadline = undefined;
      this.processing = true;
      if (this.onWake) this.guard(this.onWake, deadline, this.clock.now());
      this.runBatch();
    });
  }

  private disarm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.armedDeadline = undefined;
  }

  private runBatch(): void {
    this.immediate = undefined;
    if (!this.processing) return;
    const now = this.clock.now();
    const due = this.wheel.advance(now, this.maxTicksPerBatch);
    if (due.length > 0) this.guard(this.onDue, due);
    if (!this.processing) return; // onDue stopped us (and maybe restarted: that loop goes on)
    if (this.wheel.currentTick < this.wheel.tickOf(now)) {
      // Behind after a stall: yield so I/O is not starved, then process the next ticks.
      this.immediate = setImmediate(() => this.runBatch());
    } else {
      this.processing = false;
      this.sleep();
    }
  }

  /** Runs a callback of the caller's; nothing it throws may stop the driver. */
  private guard<A extends unknown[]>(callback: (...args: A) => void, ...args: A): void {
    try {
      callback(...args);
    } catch (error) {
      try {
        this.onError?.(error);
      } catch {
        // Reporting failed too; the driver must outlive both.
      }
    }
  }
}
