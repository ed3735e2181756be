import { DueQueue, TimingWheel, wheelCensus, type WheelCensus } from '../wheel/index.js';
import type { TaskId } from '../task.types.js';
import type { DelayContext, LifecycleService } from './delay-context.js';
import { TickDriver } from './tick-driver.js';
import { errorText } from '../delay.messages.js';

/**
 * This instance's tasks due within its window, in memory: the timing wheel,
 * the queue where the next tick's tasks wait for their exact time, and the
 * driver that moves both with the clock. Fired ids go to `fire` (the
 * executor's queue); no task work runs on the timer.
 */
export class TaskWheel implements LifecycleService {
  private readonly wheel: TimingWheel<undefined>;
  private readonly queue = new DueQueue<undefined>();
  private readonly driver: TickDriver<undefined>;
  private started = false;

  constructor(
    private readonly ctx: DelayContext,
    private readonly fire: (ids: TaskId[]) => void,
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
      onDue: (entries) => this.fire(entries.map((entry) => entry.id as TaskId)),
      onError: (error) => ctx.logger.error(`Tick failed: ${errorText(error)}`),
    });
  }

  /** Tasks held. */
  get size(): number {
    return this.wheel.size + this.queue.size;
  }

  has(id: TaskId): boolean {
    return this.wheel.has(id) || this.queue.has(id);
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

  /** Holds a task to fire at `dueAtMs` (moving it if held); a task past the window is let go. */
  hold(id: TaskId, dueAtMs: number): void {
    this.queue.cancel(id);
    if (!this.ctx.policy.isWithinWindow(dueAtMs, this.ctx.clock.now())) {
      this.wheel.cancel(id);
      return;
    }
    this.wheel.add(id, dueAtMs, undefined);
    if (this.started) this.driver.poke(dueAtMs);
  }

  /**
   * Like hold, but never later than it already is: for a write in a caller's
   * transaction, which may still roll back (the claim then finds nothing to do).
   */
  holdNoLaterThan(id: TaskId, dueAtMs: number): void {
    const current = this.wheel.get(id) ?? this.queue.get(id);
    if (current && current.dueAtMs <= dueAtMs) return;
    this.hold(id, dueAtMs);
  }

  release(id: TaskId): void {
    if (!this.wheel.cancel(id)) this.queue.cancel(id);
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
