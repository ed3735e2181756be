import { TimingWheel, type DueEntry } from './index.js';

const ids = (entries: DueEntry<unknown>[]) => entries.map((entry) => entry.id);

describe('TimingWheel', () => {
  describe("the seeds' worked example (3600 one-second slots)", () => {
    // Pointer on slot 1: tick 1 has been processed.
    const start = 1_000;

    it('puts a task 3,610 s ahead in slot 11 with one cycle to go', () => {
      const wheel = new TimingWheel({ startMs: start });
      wheel.add('review', start + 3_610_000, undefined);
      expect(wheel.currentTick).toBe(1);
      expect(wheel.placementOf('review')).toEqual({ dueTick: 3611, slot: 11, cycles: 1 });
    });

    it('fires it at 3,610 s, not at 10 s or 3,609 s', () => {
      const wheel = new TimingWheel({ startMs: start });
      wheel.add('review', start + 3_610_000, undefined);

      expect(wheel.advance(start + 10_000)).toEqual([]); // slot 11 visited once: not yet
      expect(wheel.placementOf('review')).toEqual({ dueTick: 3611, slot: 11, cycles: 0 });
      expect(wheel.advance(start + 3_609_000)).toEqual([]);
      expect(wheel.advance(start + 3_610_000 - 1)).toEqual([]);
      expect(wheel.advance(start + 3_610_000)).toEqual([
        { id: 'review', dueAtMs: start + 3_610_000, value: undefined, tick: 3611 },
      ]);
      expect(wheel.size).toBe(0);
    });
  });

  it('never fires early: an entry due inside a tick waits for the end of that tick', () => {
    const wheel = new TimingWheel<string>({ tickMs: 100, slots: 8, startMs: 0 });
    wheel.add(1, 250, 'a');
    expect(wheel.advance(299)).toEqual([]);
    expect(wheel.advance(300)).toEqual([{ id: 1, dueAtMs: 250, value: 'a', tick: 3 }]);
  });

  it('returns entries in due order, ties in insertion order, across ticks in tick order', () => {
    const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
    wheel.add('late', 29, undefined);
    wheel.add('tie-1', 25, undefined);
    wheel.add('early', 21, undefined);
    wheel.add('tie-2', 25, undefined);
    wheel.add('first', 5, undefined);
    expect(ids(wheel.advance(30))).toEqual(['first', 'early', 'tie-1', 'tie-2', 'late']);
  });

  it('re-adding an id replaces the entry and moves it behind its new tick-mates', () => {
    const wheel = new TimingWheel<string>({ tickMs: 10, slots: 8, startMs: 0 });
    wheel.add(1, 50, 'old');
    wheel.add(2, 15, 'other');
    wheel.add(1, 15, 'new');
    expect(wheel.size).toBe(2);
    expect(wheel.get(1)).toEqual({ dueAtMs: 15, value: 'new' });
    expect(wheel.advance(20)).toEqual([
      { id: 2, dueAtMs: 15, value: 'other', tick: 2 },
      { id: 1, dueAtMs: 15, value: 'new', tick: 2 },
    ]);
    expect(wheel.advance(100)).toEqual([]);
  });

  it('cancel removes an entry once; has and get follow', () => {
    const wheel = new TimingWheel<number>({ tickMs: 10, slots: 8, startMs: 0 });
    wheel.add(7, 40, 70);
    wheel.add(8, 40, 80);
    expect(wheel.has(7)).toBe(true);
    expect(wheel.cancel(7)).toBe(true);
    expect(wheel.cancel(7)).toBe(false);
    expect(wheel.has(7)).toBe(false);
    expect(wheel.get(7)).toBeUndefined();
    expect(wheel.cancel('never added')).toBe(false);
    expect(ids(wheel.advance(40))).toEqual([8]);
  });

  it('keeps numeric and string ids apart, as a Map would', () => {
    const wheel = new TimingWheel<string>({ tickMs: 10, slots: 8, startMs: 0 });
    wheel.add(1, 10, 'number');
    wheel.add('1', 10, 'string');
    expect(wheel.size).toBe(2);
    expect(wheel.get(1)?.value).toBe('number');
    expect(wheel.get('1')?.value).toBe('string');
  });

  it('keeps the first value stored after many bare entries, across growth and clear', () => {
    const wheel = new TimingWheel<string | undefined>({ tickMs: 10, slots: 8, startMs: 0 });
    for (let id = 1; id <= 40; id++) wheel.add(id, 10 * id, undefined);
    wheel.add(41, 5, 'late value');
    for (let id = 42; id <= 80; id++) wheel.add(id, 10 * id, undefined);
    expect(wheel.get(41)).toEqual({ dueAtMs: 5, value: 'late value' });
    expect(wheel.get(80)).toEqual({ dueAtMs: 800, value: undefined });
    expect(wheel.advance(10)).toEqual([
      { id: 41, dueAtMs: 5, value: 'late value', tick: 1 },
      { id: 1, dueAtMs: 10, value: undefined, tick: 1 },
    ]);
    wheel.add(2, 20, 'replaced');
    expect(wheel.get(2)?.value).toBe('replaced');
    wheel.clear();
    wheel.add(3, 30, undefined);
    expect(wheel.get(3)).toEqual({ dueAtMs: 30, value: undefined });
  });

  it('an entry already past due fires on the next advance, even within the same tick', () => {
    const wheel = new TimingWheel<string>({ tickMs: 10, slots: 8, startMs: 1_000 });
    wheel.add('past', 900, 'p');
    wheel.add('this tick', 1_000, 't');
    expect(wheel.placementOf('past')).toEqual({ dueTick: 90, slot: null, cycles: 0 });
    expect(ids(wheel.advance(1_000))).toEqual(['past', 'this tick']);
    expect(wheel.currentTick).toBe(100);
  });

  it('fires entries more than one revolution ahead on the right revolution', () => {
    const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
    wheel.add('r0', 30, undefined);
    wheel.add('r1', 30 + 80, undefined);
    wheel.add('r5', 30 + 5 * 80, undefined);
    expect(wheel.placementOf('r5')).toEqual({ dueTick: 43, slot: 3, cycles: 5 });
    const fired: [number, unknown][] = [];
    for (let now = 0; now <= 600; now += 10) {
      for (const entry of wheel.advance(now)) fired.push([now, entry.id]);
    }
    expect(fired).toEqual([
      [30, 'r0'],
      [110, 'r1'],
      [430, 'r5'],
    ]);
  });

  it('catches up over several revolutions in one call, in order', () => {
    const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
    const dues = [795, 11, 333, 80, 81, 640, 2_000];
    dues.forEach((due, i) => wheel.add(i, due, undefined));
    const fired = wheel.advance(800);
    expect(fired.map((entry) => entry.dueAtMs)).toEqual([11, 80, 81, 333, 640, 795]);
    expect(fired.map((entry) => entry.tick)).toEqual([2, 8, 9, 34, 64, 80]);
    expect(wheel.currentTick).toBe(80);
    expect(ids(wheel.advance(2_000))).toEqual([6]);
  });

  it('processes at most maxTicks ticks per call and resumes where it stopped', () => {
    const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
    for (let tick = 1; tick <= 20; tick++) wheel.add(tick, tick * 10, undefined);
    expect(ids(wheel.advance(200, 3))).toEqual([1, 2, 3]);
    expect(wheel.currentTick).toBe(3);
    expect(ids(wheel.advance(200, 10))).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12, 13]); // ≥ one revolution
    expect(wheel.currentTick).toBe(13);
    expect(ids(wheel.advance(200))).toEqual([14, 15, 16, 17, 18, 19, 20]);
    expect(wheel.currentTick).toBe(20);
  });

  it('jumps the pointer straight to now when nothing is left to process', () => {
    const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
    wheel.advance(1e9, 1);
    expect(wheel.currentTick).toBe(1e8);
    wheel.add('only', 1e9 + 15, undefined);
    expect(ids(wheel.advance(1e9 + 1e6, 5))).toEqual(['only']);
    expect(wheel.currentTick).toBe(1e8 + 1e5);
  });

  it('ignores a now that is behind the pointer: only what is due by that now fires', () => {
    const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 500 });
    wheel.add('future', 600, undefined);
    wheel.add('past', 100, undefined);
    wheel.add('between', 300, undefined); // due by the pointer, not by a clock set back to 0
    expect(ids(wheel.advance(0))).toEqual([]);
    expect(wheel.nextDueTick()).toBe(10);
    expect(ids(wheel.advance(299))).toEqual(['past']);
    expect(ids(wheel.advance(300))).toEqual(['between']);
    expect(wheel.currentTick).toBe(50);
    expect(wheel.has('future')).toBe(true);
  });

  describe('nextDueTick', () => {
    it('is undefined when empty and exact after adds and advances', () => {
      const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
      expect(wheel.nextDueTick()).toBeUndefined();
      wheel.add('a', 500, undefined);
      expect(wheel.nextDueTick()).toBe(50);
      wheel.add('b', 41, undefined);
      wheel.add('c', 45, undefined);
      expect(wheel.nextDueTick()).toBe(5);
      wheel.advance(50);
      // Recomputed: nothing within a revolution, so the pass over every slot finds tick 50.
      expect(wheel.nextDueTick()).toBe(50);
      wheel.add('d', 119, undefined);
      expect(wheel.nextDueTick()).toBe(12);
      wheel.advance(120);
      expect(wheel.nextDueTick()).toBe(50);
      wheel.advance(500);
      expect(wheel.nextDueTick()).toBeUndefined();
    });

    it('finds the earliest tick within the next revolution, skipping later revolutions in earlier slots', () => {
      const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
      wheel.add('far', 30 + 3 * 80, undefined); // slot 3, scanned before slot 6, but 3 revolutions out
      wheel.add('near', 60, undefined); // slot 6, this revolution
      wheel.add('trigger', 5, undefined);
      wheel.advance(10); // fires 'trigger', so the next call rescans
      expect(wheel.nextDueTick()).toBe(6);
    });

    it('stays a lower bound after a cancel and becomes exact after the next advance', () => {
      const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
      wheel.add('soon', 20, undefined);
      wheel.add('later', 70, undefined);
      expect(wheel.nextDueTick()).toBe(2);
      wheel.cancel('soon');
      expect(wheel.nextDueTick()).toBeLessThanOrEqual(7);
      expect(wheel.advance(20)).toEqual([]); // waking early fires nothing
      expect(wheel.nextDueTick()).toBe(7);
    });

    it('reports an overdue entry at its own due tick', () => {
      const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 1_000 });
      wheel.add('later', 1_500, undefined);
      wheel.advance(1_000);
      wheel.add('past', 333, undefined);
      expect(wheel.nextDueTick()).toBe(34);
    });

    it('forgets cancelled entries once the wheel is empty', () => {
      const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
      wheel.add('x', 20, undefined);
      wheel.cancel('x');
      expect(wheel.nextDueTick()).toBeUndefined();
      wheel.add('y', 300, undefined);
      expect(wheel.nextDueTick()).toBe(30);
    });
  });

  it('clear drops everything but keeps the pointer', () => {
    const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });
    for (let i = 0; i < 100; i++) wheel.add(i, i * 7, undefined);
    wheel.advance(55);
    wheel.clear();
    expect(wheel.size).toBe(0);
    expect(wheel.has(60)).toBe(false);
    expect(wheel.nextDueTick()).toBeUndefined();
    expect(wheel.currentTick).toBe(5);
    wheel.add('after', 70, undefined);
    expect(ids(wheel.advance(70))).toEqual(['after']);
  });

  it('grows past its initial capacity and reuses freed handles', () => {
    const wheel = new TimingWheel<number>({ tickMs: 1, slots: 16, startMs: 0 });
    for (let i = 0; i < 10_000; i++) wheel.add(i, 1 + (i % 1_000), i);
    for (let i = 0; i < 10_000; i += 2) wheel.cancel(i);
    for (let i = 10_000; i < 15_000; i++) wheel.add(i, 1_000 + i, i);
    expect(wheel.size).toBe(10_000);
    const fired = wheel.advance(1e6);
    expect(fired).toHaveLength(10_000);
    expect(fired.every((entry) => entry.value === entry.id)).toBe(true);
  });

  it('helpers convert between ms and ticks from the fixed origin', () => {
    const wheel = new TimingWheel({ tickMs: 250, startMs: 0 });
    expect(wheel.tickOf(999)).toBe(3);
    expect(wheel.dueTickOf(751)).toBe(4);
    expect(wheel.deadlineOf(4)).toBe(1_000);
  });

  describe('bad input', () => {
    const wheel = new TimingWheel({ tickMs: 10, slots: 8, startMs: 0 });

    it.each([NaN, Infinity, -Infinity])(
      'rejects dueAtMs %p, naming the argument and the id',
      (due) => {
        expect(() => wheel.add(42, due, undefined)).toThrow(
          new TypeError(
            `dueAtMs must be a finite number of epoch milliseconds; got ${due} for id 42`,
          ),
        );
        expect(wheel.has(42)).toBe(false);
      },
    );

    it('rejects ids that could never be found again', () => {
      expect(() => wheel.add(NaN, 10, undefined)).toThrow(TypeError);
      expect(() => wheel.add({} as unknown as string, 10, undefined)).toThrow(
        /id must be a finite number or a string/,
      );
    });

    it('rejects a non-finite now and a bad maxTicks', () => {
      expect(() => wheel.advance(NaN)).toThrow(/nowMs must be a finite number/);
      expect(() => wheel.advance(10, 0)).toThrow(/maxTicks must be a positive integer/);
      expect(() => wheel.advance(10, 1.5)).toThrow(RangeError);
    });

    it('rejects bad options', () => {
      expect(() => new TimingWheel({ startMs: NaN })).toThrow(/startMs/);
      expect(() => new TimingWheel({ startMs: 0, slots: 0 })).toThrow(/slots/);
      expect(() => new TimingWheel({ startMs: 0, tickMs: 0.5 })).toThrow(/tickMs/);
    });
  });
});
