import { assertTimerDeadline, type Clock, type TimerHandle } from './clock.js';

/** setTimeout fires after 1 ms when given more than this (about 24.8 days). */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export class SystemClock implements Clock {
  /** Monotonic, anchored to the epoch at process start: a step of the wall clock moves no deadline (and is not followed). */
  now(): number {
    return performance.timeOrigin + performance.now();
  }

  setTimer(atMs: number, callback: () => void): TimerHandle {
    assertTimerDeadline(atMs);
    let timeout: ReturnType<typeof setTimeout> | undefined;

    const arm = (): void => {
      // ceil: a fractional delay cut short would only wake us early to re-arm.
      const delay = Math.min(Math.max(Math.ceil(atMs - this.now()), 1), MAX_TIMEOUT_MS);
      timeout = setTimeout(wake, delay);
      // A pending timer must not keep the process (or Jest) alive on its own.
      timeout.unref();
    };
    // Timers may wake a little early (libuv rounds to its cached loop time) or, when the
    // delay was capped, a lot early: check and sleep again rather than fire early.
    const wake = (): void => {
      if (this.now() < atMs) return arm();
      timeout = undefined;
      callback();
    };

    arm();
    return {
      cancel: () => {
        if (timeout !== undefined) clearTimeout(timeout);
        timeout = undefined;
      },
    };
  }
}
