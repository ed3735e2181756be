import { TimingWheel, wheelCensus } from './index.js';

describe('wheelCensus', () => {
  // 8 slots of 100 ms; the pointer on tick 10 (slot 2): slot 3 is next, slot 2 a revolution away.
  const wheelAt = () => new TimingWheel({ tickMs: 100, slots: 8, startMs: 1_000 });

  it('counts entries per region, with their due range and this revolution apart from later ones', () => {
    const wheel = wheelAt();
    wheel.add('a', 1_050, undefined); // tick 11, slot 3
    wheel.add('b', 1_100, undefined); // tick 11, slot 3
    wheel.add('c', 1_400, undefined); // tick 14, slot 6
    wheel.add('d', 1_100 + 800, undefined); // tick 19, slot 3: next revolution
    const census = wheelCensus(wheel, 4);
    expect(census).toMatchObject({
      slots: 8,
      tickMs: 100,
      currentTick: 10,
      pointerSlot: 2,
      size: 4,
      overdue: 0,
    });
    expect(census.regions).toEqual([
      {
        fromSlot: 0,
        toSlot: 3,
        entries: 3,
        thisRevolution: 2,
        // Slots 3, then 0, 1 after the wrap, and 2 (the pointer's) last: the whole revolution.
        passFromMs: 1_100,
        passToMs: 1_800,
        earliestDueAtMs: 1_050,
        latestDueAtMs: 1_900,
      },
      {
        fromSlot: 4,
        toSlot: 7,
        entries: 1,
        thisRevolution: 1,
        passFromMs: 1_200, // slot 4 at tick 12
        passToMs: 1_500, // slot 7 at tick 15
        earliestDueAtMs: 1_400,
        latestDueAtMs: 1_400,
      },
    ]);
  });

  it('follows the pointer as the wheel turns, and counts entries added already due as overdue', () => {
    const wheel = wheelAt();
    wheel.add('late', 500, undefined);
    wheel.add('soon', 1_250, undefined); // tick 13, slot 5
    expect(wheelCensus(wheel, 8).overdue).toBe(1);
    wheel.advance(1_200); // hands 'late' out; pointer on tick 12, slot 4
    const census = wheelCensus(wheel, 3);
    expect(census).toMatchObject({ currentTick: 12, pointerSlot: 4, size: 1, overdue: 0 });
    expect(census.regions.map((r) => [r.fromSlot, r.toSlot, r.entries])).toEqual([
      [0, 2, 0],
      [3, 5, 1],
      [6, 7, 0],
    ]);
    // Slots 5 (tick 13) ... 3 and 4 a revolution on (ticks 19, 20): the region wraps the pointer.
    expect(census.regions[1]).toMatchObject({ passFromMs: 1_300, passToMs: 2_000 });
    // Slots 6, 7 at ticks 14, 15; slots 0..2 at ticks 16..18.
    expect(census.regions[2]).toMatchObject({ passFromMs: 1_400, passToMs: 1_500 });
    expect(census.regions[0]).toMatchObject({ passFromMs: 1_600, passToMs: 1_800 });
  });

  it('rejects a region that is not a positive whole number of slots', () => {
    expect(() => wheelCensus(wheelAt(), 0)).toThrow(
      'regionSlots must be a positive integer; got 0',
    );
  });
});
