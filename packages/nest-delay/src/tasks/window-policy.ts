import type { ResolvedDelayOptions } from '../delay.options.js';

/**
 * The one home of the window and lease rule: an instance holds in its wheel
 * the pending tasks leased to it (`locked_by` = its id), and it leases only
 * tasks due before its horizon (now + window). Everything later stays in
 * Postgres alone, for whichever instance's window reaches it.
 */
export class WindowPolicy {
  private running = false;
  /** The task types this instance has handlers for: the only ones it leases, fires and claims. */
  private handled: readonly string[] = [];
  private handledSet = new Set<string>();

  constructor(private readonly options: Pick<ResolvedDelayOptions, 'windowMs' | 'instanceId'>) {}

  /** Set by the runtime: an instance that is not running holds and leases nothing. */
  setRunning(running: boolean): void {
    this.running = running;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Set by the runtime once every handler is registered. */
  setHandledTypes(types: readonly string[]): void {
    this.handled = [...types];
    this.handledSet = new Set(types);
  }

  /**
   * The types this instance runs. It leases, fires and claims no other: in
   * a database shared by services (or versions) with different handlers, a
   * task waits for an instance that can run it, never dead-lettered here.
   */
  get handledTypes(): readonly string[] {
    return this.handled;
  }

  handles(type: string): boolean {
    return this.handledSet.has(type);
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
   * find it, and a loader only takes unleased tasks. Nor of a `type` it
   * has no handler for: an instance that has one leases it.
   */
  leaseOnWrite(
    dueAtMs: number,
    nowMs: number,
    inCallerTransaction: boolean,
    type?: string,
  ): string | null {
    if (inCallerTransaction || !this.running) return null;
    if (type !== undefined && !this.handles(type)) return null;
    return this.isWithinWindow(dueAtMs, nowMs) ? this.options.instanceId : null;
  }

  /** Whether a row's lease puts it in this instance's wheel. */
  holds(lockedBy: string | null): boolean {
    return this.running && lockedBy === this.options.instanceId;
  }
}
