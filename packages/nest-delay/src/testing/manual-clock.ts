import { assertTimerDeadline, type Clock, type TimerHandle } from '../clock/clock.js';

interface ManualTimer {
  atMs: number;
  callback: () => void;
}

/**
 * A clock that only moves when a test says so; timers fire synchronously inside `set` and
 * `advance`, so a test never sleeps and never needs Jest's fake timers (which also fake
 * setImmediate and hang pg and supertest).
 */
export class ManualClock implements Clock {
  private nowMs: number;
  /** Pending timers, sorted by deadline; equal deadlines keep the order they were set in. */
  private readonly timers: ManualTimer[] = [];

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    if (!Number.isFinite(startMs))
      throw new TypeError(`startMs must be a finite number; got ${startMs}`);
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  get pendingTimers(): number {
    return this.timers.length;
  }

  /** The earliest pending deadline, to check what a driver is sleeping until. */
  get nextTimerAt(): number | undefined {
    return this.timers[0]?.atMs;
  }

  setTimer(atMs: number, callback: () => void): TimerHandle {
    assertTimerDeadline(atMs);
    const timer: ManualTimer = { atMs, callback };
    let i = this.timers.length;
    while (i > 0 && this.timers[i - 1].atMs > atMs) i--;
    this.timers.splice(i, 0, timer);
    return {
      cancel: () => {
        const at = this.timers.indexOf(timer);
        if (at !== -1) this.timers.splice(at, 1);
      },
    };
  }

  /** Moves time forward to `ms` and fires what is due; `set(now())` fires timers set in the past. */
  set(ms: number): void {
    if (!Number.isFinite(ms)) throw new TypeError(`ms must be a finite number; got ${ms}`);
    if (ms < this.nowMs) {
      throw new RangeError(
        `ManualClock cannot go backwards: now is ${this.nowMs}, asked for ${ms}`,
      );
    }
    this.nowMs = ms;
    this.fireDue();
  }

  /** Moves time back by `ms`, as a wall clock set back would (SystemClock never does); pending timers keep their deadlines. */
  rewind(ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) {
      throw new RangeError(`rewind needs a non-negative number of ms; got ${ms}`);
    }
    this.nowMs -= ms;
  }

  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`advance needs a non-negative number of ms; got ${ms}`);
    this.set(this.nowMs + ms);
  }

  /** Fires in deadline order, with timers callbacks set already due; a throw is rethrown once all have run, stranding none. */
  private fireDue(): void {
    const errors: unknown[] = [];
    while (this.timers.length > 0 && this.timers[0].atMs <= this.nowMs) {
      const timer = this.timers.shift() as ManualTimer;
      try {
        timer.callback();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1)
      throw new AggregateError(errors, `${errors.length} ManualClock timers threw`);
  }
}
