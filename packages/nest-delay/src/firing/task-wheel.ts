import {
  DueQueue,
  TimingWheel,
  wheelCensus,
  type EntryId,
  type WheelCensus,
} from '../wheel/index.js';
import type { TaskId } from '../task.types.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import { TickDriver } from './tick-driver.js';
import { errorText } from '../delay.messages.js';

/** Decimal digits that always make a safe integer, with no leading zero. */
const SAFE_DECIMAL = /^(?:0|[1-9][0-9]{0,14})$/;

/**
 * The wheel's key for a task id: the number, when the id is a plain decimal
 * (Postgres' bigint ids are), else the string. A number up to 2^31 sits in
 * the key column itself; a string is one more heap object per task held
 * (~24 bytes: 1.1 MB of a 50,000-task wheel).
 */
function keyOf(id: TaskId): EntryId {
  return SAFE_DECIMAL.test(id) ? Number(id) : id;
}

/** A fired task: its id and, when the hold knew it, its type (the dispatcher routes by it). */
export interface FiredTask {
  id: TaskId;
  type: string | undefined;
}

/**
 * This instance's tasks due within its window, in memory: the timing wheel,
 * the queue where the next tick's tasks wait for their exact time, and the
 * driver that moves both with the clock. Fired tasks go to `fire` (the
 * dispatcher, which sends those of limited types to the limit gate and the
 * rest to its claim queue); no task work runs on the timer.
 *
 * Each entry keeps its task's type, interned: 8 bytes an entry (a reference
 * to the one string of its type), no object per entry.
 */
export class TaskWheel implements LifecycleService {
  private readonly wheel: TimingWheel<string | undefined>;
  private readonly queue = new DueQueue<string | undefined>();
  private readonly driver: TickDriver<string | undefined>;
  /** Each type once: entries hold these references, not the strings rows came with. */
  private readonly types = new Map<string, string>();
  private started = false;

  constructor(
    private readonly ctx: DelayContext,
    private readonly fire: (tasks: FiredTask[]) => void,
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
      onDue: (entries) =>
        this.fire(entries.map((entry) => ({ id: String(entry.id), type: entry.value }))),
      onError: (error) => ctx.logger.error(`Tick failed: ${errorText(error)}`),
    });
  }

  /** Tasks held. */
  get size(): number {
    return this.wheel.size + this.queue.size;
  }

  has(id: TaskId): boolean {
    const key = keyOf(id);
    return this.wheel.has(key) || this.queue.has(key);
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

  /**
   * Holds a task of `type` to fire at `dueAtMs` (moving it if held); a task
   * past the window is let go. No `type`: the one it is held with, if any (a
   * claim failed as a whole knows its ids only); fired with none, a plain
   * claim sends it to the gate if its type is limited.
   */
  hold(id: TaskId, dueAtMs: number, type?: string): void {
    const key = keyOf(id);
    const known = type === undefined ? (this.wheel.get(key) ?? this.queue.get(key))?.value : type;
    this.queue.cancel(key);
    if (!this.ctx.policy.isWithinWindow(dueAtMs, this.ctx.clock.now())) {
      this.wheel.cancel(key);
      return;
    }
    this.wheel.add(key, dueAtMs, known === undefined ? undefined : this.intern(known));
    if (this.started) this.driver.poke(dueAtMs);
  }

  /** Like hold, but never later than it already is (firing/holds.ts says when). */
  holdNoLaterThan(id: TaskId, dueAtMs: number, type: string): void {
    const key = keyOf(id);
    const current = this.wheel.get(key) ?? this.queue.get(key);
    if (current && current.dueAtMs <= dueAtMs) return;
    this.hold(id, dueAtMs, type);
  }

  private intern(type: string): string {
    if (!this.types.has(type)) this.types.set(type, type);
    return this.types.get(type)!;
  }

  /** No longer held here (it ran, was cancelled, or is leased elsewhere): the lease is another matter. */
  drop(id: TaskId): void {
    const key = keyOf(id);
    if (!this.wheel.cancel(key)) this.queue.cancel(key);
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
