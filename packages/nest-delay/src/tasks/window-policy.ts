import type { ResolvedDelayOptions } from '../delay.options.js';

/**
 * The one home of the window and lease rule: an instance holds the pending
 * tasks leased to it, and leases only tasks due before now + window, of the
 * types it handles.
 */
export class WindowPolicy {
  private running = false;
  private handled: readonly string[] = [];
  private handledSet = new Set<string>();

  constructor(
    private readonly options: Pick<ResolvedDelayOptions, 'windowMs' | 'instanceId' | 'leaseMs'>,
  ) {}

  /** Set by the runtime: an instance that is not running holds and leases nothing. */
  setRunning(running: boolean): void {
    this.running = running;
  }

  get isRunning(): boolean {
    return this.running;
  }

  setHandledTypes(types: readonly string[]): void {
    this.handled = [...types];
    this.handledSet = new Set(types);
  }

  /** The only types this instance leases, fires and claims: in a database shared by services with different handlers, a task waits for one that runs it. */
  get handledTypes(): readonly string[] {
    return this.handled;
  }

  handles(type: string): boolean {
    return this.handledSet.has(type);
  }

  /**
   * How long an occurrence of a schedule may be overdue before its catch-up
   * policy applies: two leases. A crashed instance's tasks are taken over
   * within a lease and a heartbeat, so one that late means no instance ran.
   * The planner and the claim's verdict on an occurrence both apply it.
   */
  get overdueAfterMs(): number {
    return 2 * this.options.leaseMs;
  }

  /** Tasks due before this instant belong in a wheel. */
  horizonMs(nowMs: number): number {
    return nowMs + this.options.windowMs;
  }

  isWithinWindow(dueAtMs: number, nowMs: number): boolean {
    return dueAtMs < this.horizonMs(nowMs);
  }

  /**
   * Who holds a task this instance writes: itself if running, the task is due
   * within the window and of a type it handles. Never in a caller's
   * transaction: it may commit after the task falls due, and only an unleased
   * task is found by a loader. Pass `type` whenever it is known: a type not
   * handled here must never be leased here; where only the statement reads
   * it, the action carries `handledTypes`.
   */
  leaseOnWrite(
    dueAtMs: number,
    nowMs: number,
    inCallerTransaction = false,
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
