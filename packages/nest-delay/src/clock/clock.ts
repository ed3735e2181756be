/** The engine's only source of time, so tests can move it by hand; nothing else reads `Date` or calls `setTimeout`. */
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

/** DI token for the Clock. */
export const CLOCK = Symbol('CLOCK');

export function assertTimerDeadline(atMs: number): void {
  if (typeof atMs !== 'number' || !Number.isFinite(atMs)) {
    throw new TypeError(`atMs must be a finite number of epoch milliseconds; got ${String(atMs)}`);
  }
}
