import type { TimingWheel } from './timing-wheel.js';

/** A run of consecutive slots, as `wheelCensus` reports it; times are epoch ms. */
export interface WheelRegion {
  fromSlot: number;
  toSlot: number;
  /** Entries in these slots, whatever revolution they fire on. */
  entries: number;
  /** Of those, the ones that fire on the pointer's next pass. */
  thisRevolution: number;
  /** When the pointer's next pass over the region starts and ends (tick deadlines). */
  passFromMs: number;
  passToMs: number;
  earliestDueAtMs: number | null;
  latestDueAtMs: number | null;
}

/** A picture of the ring: its shape, the pointer, and what each region holds. */
export interface WheelCensus {
  slots: number;
  tickMs: number;
  currentTick: number;
  /** The slot of the last tick processed. */
  pointerSlot: number;
  size: number;
  /** Entries added already due, handed out at the next advance. */
  overdue: number;
  regions: WheelRegion[];
}

/**
 * Entries per region of `regionSlots` consecutive slots, with when the pointer
 * next passes over each and their earliest and latest due times. No
 * allocation per entry: cheap enough for every dashboard request.
 */
export function wheelCensus(wheel: TimingWheel<unknown>, regionSlots: number): WheelCensus {
  if (!Number.isInteger(regionSlots) || regionSlots < 1) {
    throw new RangeError(`regionSlots must be a positive integer; got ${regionSlots}`);
  }
  const { slots, currentTick: tick } = wheel;
  const regions: WheelRegion[] = [];
  for (let fromSlot = 0; fromSlot < slots; fromSlot += regionSlots) {
    const toSlot = Math.min(slots, fromSlot + regionSlots) - 1;
    const [firstTick, lastTick] = nextPass(wheel, fromSlot, toSlot);
    const region: WheelRegion = {
      fromSlot,
      toSlot,
      entries: 0,
      thisRevolution: 0,
      passFromMs: wheel.deadlineOf(firstTick),
      passToMs: wheel.deadlineOf(lastTick),
      earliestDueAtMs: null,
      latestDueAtMs: null,
    };
    const visit = (dueAtMs: number) => {
      region.entries++;
      // In a slot, an entry is due after the pointer; within one revolution it fires on this pass.
      if (wheel.dueTickOf(dueAtMs) - tick <= slots) region.thisRevolution++;
      if (region.earliestDueAtMs === null || dueAtMs < region.earliestDueAtMs)
        region.earliestDueAtMs = dueAtMs;
      if (region.latestDueAtMs === null || dueAtMs > region.latestDueAtMs)
        region.latestDueAtMs = dueAtMs;
    };
    for (let slot = fromSlot; slot <= toSlot; slot++) wheel.forEachDueInSlot(slot, visit);
    regions.push(region);
  }
  return {
    slots,
    tickMs: wheel.tickMs,
    currentTick: tick,
    pointerSlot: wheel.slotOfTick(tick),
    size: wheel.size,
    overdue: wheel.overdueCount,
    regions,
  };
}

/**
 * The first and last tick at which the pointer next visits slots
 * fromSlot..toSlot. The slot after the pointer's is one tick away, the
 * pointer's own a whole revolution away; a region holding both wraps around
 * the pointer, so its pass spans the whole revolution.
 */
function nextPass(wheel: TimingWheel<unknown>, fromSlot: number, toSlot: number): [number, number] {
  const tick = wheel.currentTick;
  const away = (slot: number) => wheel.slotOfTick(slot - tick - 1) + 1;
  const next = wheel.slotOfTick(tick + 1);
  if (next > fromSlot && next <= toSlot) return [tick + 1, tick + wheel.slots];
  return [tick + away(fromSlot), tick + away(toSlot)];
}
