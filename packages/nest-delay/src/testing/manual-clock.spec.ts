import { ManualClock } from './manual-clock.js';

describe('ManualClock', () => {
  it('starts at 2026-01-01 unless told otherwise', () => {
    expect(new ManualClock().now()).toBe(Date.UTC(2026, 0, 1));
    expect(new ManualClock(1_000).now()).toBe(1_000);
  });

  it('advance fires due timers in deadline order, ties in the order they were set', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    clock.setTimer(30, () => fired.push('30'));
    clock.setTimer(10, () => fired.push('10a'));
    clock.setTimer(50, () => fired.push('50'));
    clock.setTimer(10, () => fired.push('10b'));

    clock.advance(9);
    expect(fired).toEqual([]);
    clock.advance(21);
    expect(fired).toEqual(['10a', '10b', '30']);
    expect(clock.pendingTimers).toBe(1);
    expect(clock.nextTimerAt).toBe(50);
  });

  it('fires in the same call timers that callbacks set already due, and keeps later ones', () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    clock.setTimer(10, () => {
      fired.push('first');
      clock.setTimer(5, () => fired.push('set in the past'));
      clock.setTimer(20, () => fired.push('due by now'));
      clock.setTimer(101, () => fired.push('later'));
    });
    clock.advance(100);
    expect(fired).toEqual(['first', 'set in the past', 'due by now']);
    expect(clock.pendingTimers).toBe(1);
  });

  it('fires a timer set in the past on the next advance, even of zero', () => {
    const clock = new ManualClock(1_000);
    let fired = false;
    clock.setTimer(500, () => (fired = true));
    expect(fired).toBe(false); // never synchronously inside setTimer
    clock.advance(0);
    expect(fired).toBe(true);
  });

  it('does not fire a cancelled timer', () => {
    const clock = new ManualClock(0);
    let fired = false;
    const timer = clock.setTimer(10, () => (fired = true));
    timer.cancel();
    timer.cancel();
    expect(clock.pendingTimers).toBe(0);
    clock.advance(100);
    expect(fired).toBe(false);
  });

  it('never moves backwards', () => {
    const clock = new ManualClock(1_000);
    expect(() => clock.set(999)).toThrow(/cannot go backwards: now is 1000, asked for 999/);
    expect(() => clock.advance(-1)).toThrow(RangeError);
    clock.set(2_000);
    expect(clock.now()).toBe(2_000);
  });

  it('goes back only when told to rewind, and its timers then wait for their deadline again', () => {
    const clock = new ManualClock(10_000);
    const fired: number[] = [];
    clock.setTimer(10_500, () => fired.push(clock.now()));
    clock.rewind(3_000);
    expect(clock.now()).toBe(7_000);
    clock.advance(3_000);
    expect(fired).toEqual([]);
    clock.advance(500);
    expect(fired).toEqual([10_500]);
    expect(() => clock.rewind(-1)).toThrow(RangeError);
  });

  it('runs every due timer even when one throws, then rethrows', () => {
    const clock = new ManualClock(0);
    let ranAfter = false;
    clock.setTimer(1, () => {
      throw new Error('boom');
    });
    clock.setTimer(2, () => (ranAfter = true));
    expect(() => clock.advance(5)).toThrow('boom');
    expect(ranAfter).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects a non-finite deadline', () => {
    expect(() => new ManualClock().setTimer(NaN, () => undefined)).toThrow(
      /atMs must be a finite number/,
    );
  });
});
