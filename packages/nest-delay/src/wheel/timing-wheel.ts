/**
 * A hashed timing wheel as a pure data structure: no clock, no timers, no `Date`; the
 * caller passes the time (epoch ms) to `advance`.
 *
 * Ticks are absolute: an entry due at t belongs to tick ceil(t / tickMs), so it never fires
 * early, in slot `dueTick mod slots`. Entries keep their absolute due time instead of a
 * cycle counter (cycles are derived), so a visit writes nothing to entries not yet due,
 * nothing drifts when a visit is skipped, and a long stall is caught up in one pass.
 * Invariant: the slots hold only entries due after the pointer; the rest wait in the
 * overdue list.
 */
import { EntryTable, NIL } from './entry-table.js';
import type { EntryId } from './id-index.js';

export interface TimingWheelOptions {
  /** Slots per revolution; the default 3600 one-second slots make one hour. */
  slots?: number;
  /** Tick length in whole milliseconds, so every deadline is an exact integer. */
  tickMs?: number;
  /** Epoch ms the wheel starts at; the tick containing it counts as already processed. */
  startMs: number;
}

export interface DueEntry<V> {
  id: EntryId;
  dueAtMs: number;
  value: V;
  /** The tick the entry belongs to: ceil(dueAtMs / tickMs). */
  tick: number;
}

export interface Placement {
  dueTick: number;
  /** null while the entry waits in the overdue list for the next `advance`. */
  slot: number | null;
  /** Further visits of its slot before the one that fires it. */
  cycles: number;
}

function byDueTime<V>(a: DueEntry<V>, b: DueEntry<V>): number {
  return a.dueAtMs - b.dueAtMs; // Array#sort is stable: equal times keep insertion order
}

export class TimingWheel<V = undefined> {
  readonly slots: number;
  readonly tickMs: number;
  private tick: number;
  /** Lists 0..slots-1 are the slots; list `slots` holds entries added already past due. */
  private readonly entries: EntryTable<V>;
  private readonly overdue: number;
  private inSlots = 0;
  /** A lower bound of the earliest due tick, trusted while `nextDueKnown`. */
  private nextDue: number | undefined = undefined;
  private nextDueKnown = true;

  constructor({ slots = 3600, tickMs = 1000, startMs }: TimingWheelOptions) {
    if (!Number.isInteger(slots) || slots < 1 || slots > 2 ** 30) {
      throw new RangeError(`slots must be an integer between 1 and 2^30; got ${slots}`);
    }
    if (!Number.isInteger(tickMs) || tickMs < 1) {
      throw new RangeError(`tickMs must be a positive whole number of milliseconds; got ${tickMs}`);
    }
    if (!Number.isFinite(startMs)) {
      throw new TypeError(`startMs must be a finite number of epoch milliseconds; got ${startMs}`);
    }
    this.slots = slots;
    this.tickMs = tickMs;
    this.tick = Math.floor(startMs / tickMs);
    this.overdue = slots;
    this.entries = new EntryTable<V>(slots + 1);
  }

  /** The last tick processed; entries due at or before it have all been handed out. */
  get currentTick(): number {
    return this.tick;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The tick containing `ms`. */
  tickOf(ms: number): number {
    return Math.floor(ms / this.tickMs);
  }

  /** The tick an entry due at `dueAtMs` fires on: the first tick not before it. */
  dueTickOf(dueAtMs: number): number {
    return Math.ceil(dueAtMs / this.tickMs);
  }

  deadlineOf(tick: number): number {
    return tick * this.tickMs;
  }

  /** Adds the entry for `id`, or replaces it (it then goes behind its new tick-mates). O(1). */
  add(id: EntryId, dueAtMs: number, value: V): void {
    if (typeof id === 'number' ? !Number.isFinite(id) : typeof id !== 'string') {
      throw new TypeError(`id must be a finite number or a string; got ${String(id)}`);
    }
    if (typeof dueAtMs !== 'number' || !Number.isFinite(dueAtMs)) {
      throw new TypeError(
        `dueAtMs must be a finite number of epoch milliseconds; got ${String(dueAtMs)} for id ${id}`,
      );
    }
    const existing = this.entries.find(id);
    if (existing !== NIL) this.remove(existing);

    const dueTick = this.dueTickOf(dueAtMs);
    const list = dueTick <= this.tick ? this.overdue : this.slotOf(dueTick);
    this.entries.append(list, id, dueAtMs, value);
    if (list !== this.overdue) this.inSlots++;
    if (this.nextDueKnown) {
      this.nextDue = this.nextDue === undefined ? dueTick : Math.min(this.nextDue, dueTick);
    }
  }

  cancel(id: EntryId): boolean {
    const handle = this.entries.find(id);
    if (handle === NIL) return false;
    this.remove(handle);
    return true;
  }

  has(id: EntryId): boolean {
    return this.entries.find(id) !== NIL;
  }

  get(id: EntryId): { dueAtMs: number; value: V } | undefined {
    const handle = this.entries.find(id);
    if (handle === NIL) return undefined;
    return { dueAtMs: this.entries.dueAtOf(handle), value: this.entries.valueOf(handle) };
  }

  /** Where the entry sits, with its cycle count derived from the pointer. */
  placementOf(id: EntryId): Placement | undefined {
    const handle = this.entries.find(id);
    if (handle === NIL) return undefined;
    const dueTick = this.dueTickOf(this.entries.dueAtOf(handle));
    if (dueTick <= this.tick) return { dueTick, slot: null, cycles: 0 };
    const cycles = Math.floor((dueTick - this.tick - 1) / this.slots);
    return { dueTick, slot: this.slotOf(dueTick), cycles };
  }

  /** Entries added already due, waiting for the next `advance`. */
  get overdueCount(): number {
    return this.size - this.inSlots;
  }

  /** The slot of a tick (the pointer's slot is slotOfTick(currentTick)). */
  slotOfTick(tick: number): number {
    return this.slotOf(tick);
  }

  /** Calls `visit` with the due time of each entry in `slot`, for pictures of the ring (wheel-census.ts). */
  forEachDueInSlot(slot: number, visit: (dueAtMs: number) => void): void {
    const { entries } = this;
    for (let h = entries.first(slot); h !== NIL; h = entries.after(h)) visit(entries.dueAtOf(h));
  }

  /** Drops every entry and gives memory back; the pointer stays where it is. */
  clear(): void {
    this.entries.clear();
    this.inSlots = 0;
    this.nextDue = undefined;
    this.nextDueKnown = true;
  }

  /**
   * Hands out, earliest first, every entry due by `nowMs`: first the overdue list (entries
   * added already past due by the pointer, and due by `nowMs`: a clock that went back leaves
   * the pointer ahead of it), then tick by tick up to tickOf(nowMs), at most `maxTicks` ticks
   * per call so a driver can yield between batches. The pointer stays on the last tick
   * processed, except that it jumps straight to tickOf(nowMs) once the slots are empty.
   */
  advance(nowMs: number, maxTicks = Infinity): DueEntry<V>[] {
    if (typeof nowMs !== 'number' || !Number.isFinite(nowMs)) {
      throw new TypeError(
        `nowMs must be a finite number of epoch milliseconds; got ${String(nowMs)}`,
      );
    }
    if (!(maxTicks >= 1) || (maxTicks !== Infinity && !Number.isInteger(maxTicks))) {
      throw new RangeError(`maxTicks must be a positive integer or Infinity; got ${maxTicks}`);
    }
    const fired: DueEntry<V>[] = [];
    const target = this.tickOf(nowMs);
    // Overdue means due by the pointer; a clock set back behind the pointer
    // must still not see them before their time.
    if (this.inSlots < this.size) this.collect(this.overdue, target, fired);

    if (target > this.tick) {
      const end = Math.min(target, this.tick + maxTicks);
      // A gap of a whole revolution would visit some slots twice: one pass finds it all.
      if (end - this.tick >= this.slots) this.sweep(end, fired);
      else this.step(end, fired);
      if (this.inSlots === 0) this.tick = target;
    }
    if (this.nextDue !== undefined && this.nextDue <= this.tick) this.nextDueKnown = false;
    return fired;
  }

  /**
   * A tick no later than the earliest entry's due tick, or undefined when empty: exact,
   * unless entries were cancelled since it was computed (then a lower bound, which is safe:
   * waking early fires nothing). A driver sleeps until `deadlineOf` it.
   */
  nextDueTick(): number | undefined {
    if (this.size === 0) return undefined;
    if (!this.nextDueKnown) {
      this.nextDue = this.scanNextDue();
      this.nextDueKnown = true;
    }
    return this.nextDue;
  }

  private step(end: number, fired: DueEntry<V>[]): void {
    while (this.tick < end && this.inSlots > 0) {
      const tick = this.tick + 1;
      this.collect(this.slotOf(tick), tick, fired);
      this.tick = tick;
    }
    this.tick = end;
  }

  private sweep(end: number, fired: DueEntry<V>[]): void {
    const batch: DueEntry<V>[] = [];
    for (let slot = 0; slot < this.slots && this.inSlots > 0; slot++) {
      this.collect(slot, end, batch, false);
    }
    batch.sort(byDueTime);
    for (const entry of batch) fired.push(entry);
    this.tick = end;
  }

  /** Moves the entries of one list due by `byTick` to `out`, sorted unless told not to. */
  private collect(list: number, byTick: number, out: DueEntry<V>[], sort = true): void {
    const { entries } = this;
    const start = out.length;
    for (let handle = entries.first(list); handle !== NIL;) {
      const following = entries.after(handle);
      const dueAtMs = entries.dueAtOf(handle);
      const tick = this.dueTickOf(dueAtMs);
      if (tick <= byTick) {
        out.push({ id: entries.idOf(handle), dueAtMs, value: entries.valueOf(handle), tick });
        this.remove(handle, list);
      }
      handle = following;
    }
    if (sort && out.length - start > 1) {
      const sorted = out.splice(start).sort(byDueTime);
      for (const entry of sorted) out.push(entry);
    }
  }

  private scanNextDue(): number {
    const { entries } = this;
    let earliest = Infinity;
    for (let h = entries.first(this.overdue); h !== NIL; h = entries.after(h)) {
      earliest = Math.min(earliest, this.dueTickOf(entries.dueAtOf(h)));
    }
    if (earliest !== Infinity) return earliest;
    // Slots in pointer order: the first entry whose due tick is the tick being looked at is
    // the earliest. If none is within a revolution, the pass has seen every entry anyway.
    for (let tick = this.tick + 1; tick <= this.tick + this.slots; tick++) {
      for (let h = entries.first(this.slotOf(tick)); h !== NIL; h = entries.after(h)) {
        const dueTick = this.dueTickOf(entries.dueAtOf(h));
        if (dueTick === tick) return tick;
        earliest = Math.min(earliest, dueTick);
      }
    }
    return earliest;
  }

  private slotOf(tick: number): number {
    const slot = tick % this.slots;
    return slot < 0 ? slot + this.slots : slot;
  }

  private remove(handle: number, list?: number): void {
    if (list === undefined) {
      const dueTick = this.dueTickOf(this.entries.dueAtOf(handle));
      list = dueTick <= this.tick ? this.overdue : this.slotOf(dueTick);
    }
    this.entries.delete(handle, list);
    if (list !== this.overdue) this.inSlots--;
    if (this.size === 0) {
      // Nothing left to bound: forget ticks of cancelled entries, so the next add is exact.
      this.nextDue = undefined;
      this.nextDueKnown = true;
    }
  }
}
