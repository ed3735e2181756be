import { TimingWheel } from '../wheel/index.js';
import type { TaskId } from '../task.types.js';
import type { DelayContext, LifecycleService } from './delay-context.js';
import { TickDriver } from './tick-driver.js';
import { errorText } from '../delay.messages.js';

/**
 * This instance's tasks due within its window, in memory: the timing wheel
 * and the tick driver that turns it with the clock. Fired ids go to `fire`
 * (the executor's queue); the wheel never runs task work on its tick.
 */
export class TaskWheel implements LifecycleService {
  private readonly wheel: TimingWheel<undefined>;
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
      clock: ctx.clock,
      onDue: (entries) => this.fire(entries.map((entry) => entry.id as TaskId)),
      onError: (error) => ctx.logger.error(`Tick failed: ${errorText(error)}`),
    });
  }

  /** Tasks held. */
  get size(): number {
    return this.wheel.size;
  }

  has(id: TaskId): boolean {
    return this.wheel.has(id);
  }

  async start(): Promise<void> {
    this.started = true;
    this.driver.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    this.driver.stop();
    this.wheel.clear();
  }

  /** Holds a task to fire at `dueAtMs` (moving it if held); a task past the window is let go. */
  hold(id: TaskId, dueAtMs: number): void {
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
    const current = this.wheel.get(id);
    if (current && current.dueAtMs <= dueAtMs) return;
    this.hold(id, dueAtMs);
  }

  release(id: TaskId): void {
    this.wheel.cancel(id);
  }

  /** Turns the wheel to now and fires what is due, without waiting for the next tick (tests). */
  turnNow(): number {
    const due = this.wheel.advance(this.ctx.clock.now());
    if (due.length > 0) this.fire(due.map((entry) => entry.id as TaskId));
    return due.length;
  }
}
