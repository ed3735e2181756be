/**
 * Where the delay module gets its time from, so tests can move time by hand and the wheel
 * and its driver never read `Date` or call `setTimeout` themselves.
 */
export interface Clock {
  /**
   * Epoch milliseconds; should never go backwards (SystemClock is monotonic).
   * One that does anyway fires nothing early: tasks due in the stepped-over
   * span run late by up to the step.
   */
  now(): number;
  /** Calls `callback` once, never before `now() >= atMs`. */
  setTimer(atMs: number, callback: () => void): TimerHandle;
}

export interface TimerHandle {
  /** Idempotent; after it returns the callback will not run. */
  cancel(): void;
}

/** DI token for the Clock; a Symbol so it cannot collide with a class token. */
export const CLOCK = Symbol('CLOCK');

export function assertTimerDeadline(atMs: number): void {
  if (typeof atMs !== 'number' || !Number.isFinite(atMs)) {
    throw new TypeError(`atMs must be a finite number of epoch milliseconds; got ${String(atMs)}`);
  }
}
