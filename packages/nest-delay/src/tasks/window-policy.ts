import type { ResolvedDelayOptions } from '../delay.options.js';

/**
 * The one home of the window and lease rule: an instance holds in its wheel
 * the pending tasks leased to it (`locked_by` = its id), and it leases only
 * tasks due before its horizon (now + window). Everything later stays in
 * Postgres alone, for whichever instance's window reaches it.
 */
export class WindowPolicy {
  private running = false;

  constructor(private readonly options: Pick<ResolvedDelayOptions, 'windowMs' | 'instanceId'>) {}

  /** Set by the runtime: an instance that is not running holds and leases nothing. */
  setRunning(running: boolean): void {
    this.running = running;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Tasks due before this instant belong in a wheel. */
  horizonMs(nowMs: number): number {
    return nowMs + this.options.windowMs;
  }

  isWithinWindow(dueAtMs: number, nowMs: number): boolean {
    return dueAtMs < this.horizonMs(nowMs);
  }

  /**
   * Who holds a task this instance is writing: itself when it runs and the
   * task is due within its window. Written in a caller's transaction, nobody:
   * if that transaction commits after the task falls due, a loader must still
   * find it, and a loader only takes unleased tasks.
   */
  leaseOnWrite(dueAtMs: number, nowMs: number, inCallerTransaction: boolean): string | null {
    if (inCallerTransaction || !this.running) return null;
    return this.isWithinWindow(dueAtMs, nowMs) ? this.options.instanceId : null;
  }

  /** Whether a row's lease puts it in this instance's wheel. */
  holds(lockedBy: string | null): boolean {
    return this.running && lockedBy === this.options.instanceId;
  }
}
