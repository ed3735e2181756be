import { SystemClock, type Clock, type TimerHandle } from '../clock/index.js';
import { ManualClock } from '../testing/manual-clock.js';
import { TickDriver } from './task-wheel.js';
import { DueQueue, TimingWheel, type DueEntry, type EntryId } from '../wheel/index.js';

const SECOND = 1_000;

function manualSetup(maxTicksPerBatch?: number) {
  const clock = new ManualClock();
  const wheel = new TimingWheel<string>({ tickMs: SECOND, slots: 60, startMs: clock.now() });
  const fired: EntryId[] = [];
  const driver = new TickDriver({
    wheel,
    queue: new DueQueue<string>(),
    clock,
    maxTicksPerBatch,
    onDue: (entries) => fired.push(...entries.map((entry) => entry.id)),
  });
  const t0 = clock.now();
  return { clock, wheel, driver, fired, t0 };
}

/** Resolves once `check` holds, polling on the event loop; rejects after `timeoutMs`. */
async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('TickDriver with a ManualClock', () => {
  it('takes an entry out of the wheel a tick ahead and fires it at its own due time', () => {
    const { clock, wheel, driver, fired, t0 } = manualSetup();
    wheel.add('a', t0 + 2_500, 'x');
    driver.start();
    expect(clock.nextTimerAt).toBe(t0 + 2_000); // its tick (3 s) comes within one tick

    clock.advance(2_000);
    expect(fired).toEqual([]);
    expect(clock.nextTimerAt).toBe(t0 + 2_500);
    clock.advance(499);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual(['a']);
    expect(clock.pendingTimers).toBe(0);
    driver.stop();
  });

  it('fires the entries of one tick one by one, each at its time, in order', () => {
    const { clock, wheel, driver, fired, t0 } = manualSetup();
    for (const [id, at] of [
      ['b', 1_700],
      ['a', 1_100],
      ['c', 1_700],
      ['d', 1_999],
    ] as const) {
      wheel.add(id, t0 + at, 'x');
    }
    driver.start();
    const firedAt: Record<string, number> = {};
    while (clock.nextTimerAt !== undefined) {
      clock.set(clock.nextTimerAt);
      for (const id of fired) firedAt[id] ??= clock.now() - t0;
    }
    expect(fired).toEqual(['a', 'b', 'c', 'd']);
    expect(firedAt).toEqual({ a: 1_100, b: 1_700, c: 1_700, d: 1_999 });
    driver.stop();
  });

  it('runDue hands out what is due by a given now at once, and nothing later', () => {
    const { wheel, driver, fired, t0 } = manualSetup();
    wheel.add('now', t0 + 300, 'x');
    wheel.add('soon', t0 + 301, 'x');
    expect(driver.runDue(t0 + 300)).toBe(1);
    expect(fired).toEqual(['now']);
    expect(driver.runDue(t0 + 300)).toBe(0);
    expect(driver.runDue(t0 + 301)).toBe(1);
    expect(fired).toEqual(['now', 'soon']);
  });

  it('sets no timer while the wheel is empty, and none once the last entry fired', () => {
    const { clock, wheel, driver, fired, t0 } = manualSetup();
    driver.start();
    expect(driver.running).toBe(true);
    expect(clock.pendingTimers).toBe(0);

    wheel.add('a', t0 + SECOND, 'x');
    driver.poke(t0 + SECOND);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(SECOND);
    expect(fired).toEqual(['a']);
    expect(clock.pendingTimers).toBe(0);
    driver.stop();
  });

  it('poke re-arms for an earlier entry and ignores later ones', () => {
    const { clock, wheel, driver, fired, t0 } = manualSetup();
    wheel.add('late', t0 + 10 * SECOND, 'x');
    driver.start();
    expect(clock.nextTimerAt).toBe(t0 + 9 * SECOND);

    wheel.add('early', t0 + 2_200, 'x');
    driver.poke(t0 + 2_200);
    expect(clock.nextTimerAt).toBe(t0 + 2 * SECOND); // when its tick (3 s) comes within reach
    expect(clock.pendingTimers).toBe(1);

    wheel.add('later', t0 + 20 * SECOND, 'x');
    driver.poke(t0 + 20 * SECOND);
    expect(clock.nextTimerAt).toBe(t0 + 2 * SECOND);

    clock.advance(2_200);
    expect(fired).toEqual(['early']);
    expect(clock.nextTimerAt).toBe(t0 + 9 * SECOND);
    driver.stop();
  });

  it('stop leaves no timer and nothing fires afterwards', () => {
    const { clock, wheel, driver, fired, t0 } = manualSetup();
    wheel.add('a', t0 + SECOND, 'x');
    driver.start();
    driver.stop();
    expect(driver.running).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    driver.poke(t0 + SECOND);
    clock.advance(5 * SECOND);
    expect(fired).toEqual([]);
  });

  it('processes missed ticks in order, in batches, yielding between them', async () => {
    const { clock, wheel, driver, fired, t0 } = manualSetup(2);
    for (let i = 1; i <= 9; i++) wheel.add(i, t0 + i * SECOND, 'x');
    driver.start();

    clock.advance(9 * SECOND);
    expect(fired).toEqual([1, 2]); // first batch runs on the timer; the rest after yielding
    await until(() => fired.length === 9);
    expect(fired).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(wheel.currentTick).toBe(wheel.tickOf(clock.now()) + 1); // the wheel runs a tick ahead
    driver.stop();
  });

  it('hands a burst out a thousand at a time, yielding between, so the first claims start at once', async () => {
    const { clock, wheel, driver, fired, t0 } = manualSetup();
    for (let i = 0; i < 2_500; i++) wheel.add(i, t0 + 1_500, 'x');
    driver.start();
    clock.advance(1_500);
    expect(fired).toHaveLength(1_000);
    await until(() => fired.length === 2_500);
    expect(fired).toEqual(Array.from({ length: 2_500 }, (_, i) => i));
    driver.stop();
  });

  it('arms no second timer when poked while catching up', async () => {
    const clock = new ManualClock();
    const t0 = clock.now();
    const wheel = new TimingWheel<string>({ tickMs: SECOND, slots: 60, startMs: t0 });
    const fired: EntryId[] = [];
    const driver: TickDriver<string> = new TickDriver({
      wheel,
      queue: new DueQueue(),
      clock,
      maxTicksPerBatch: 1,
      onDue: (entries) => {
        for (const { id } of entries) {
          fired.push(id);
          if (id === 1) {
            wheel.add('extra', t0 + 2_500, 'x');
            driver.poke(t0 + 2_500);
          }
        }
      },
    });
    for (let i = 1; i <= 4; i++) wheel.add(i, t0 + i * SECOND, 'x');
    driver.start();

    clock.advance(4 * SECOND);
    expect(fired).toEqual([1]);
    expect(clock.pendingTimers).toBe(0); // the catch-up loop owns the wheel until it sleeps
    await until(() => fired.length === 5);
    expect(fired).toEqual([1, 2, 'extra', 3, 4]);
    expect(clock.pendingTimers).toBe(0);
    driver.stop();
  });

  it('stop during a catch-up cancels the pending batch', async () => {
    const { clock, wheel, driver, fired, t0 } = manualSetup(1);
    for (let i = 1; i <= 5; i++) wheel.add(i, t0 + i * SECOND, 'x');
    driver.start();
    clock.advance(5 * SECOND);
    driver.stop();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(fired).toEqual([1]);
  });

  it('keeps going when onDue throws, reporting the error', () => {
    const clock = new ManualClock();
    const t0 = clock.now();
    const wheel = new TimingWheel<string>({ tickMs: SECOND, slots: 60, startMs: t0 });
    const seen: EntryId[] = [];
    const errors: unknown[] = [];
    const driver = new TickDriver({
      wheel,
      queue: new DueQueue(),
      clock,
      onDue: (entries) => {
        seen.push(...entries.map((entry) => entry.id));
        throw new Error(`handler failed for ${entries[0].id}`);
      },
      onError: (error) => errors.push(error),
    });
    wheel.add('a', t0 + SECOND, 'x');
    wheel.add('b', t0 + 2 * SECOND, 'x');
    driver.start();
    clock.advance(SECOND);
    clock.advance(SECOND);
    expect(seen).toEqual(['a', 'b']);
    expect(errors.map((error) => (error as Error).message)).toEqual([
      'handler failed for a',
      'handler failed for b',
    ]);
    driver.stop();
  });

  it('arms for entries that onDue adds while it runs', () => {
    const clock = new ManualClock();
    const t0 = clock.now();
    const wheel = new TimingWheel<number>({ tickMs: SECOND, slots: 60, startMs: t0 });
    const fired: number[] = [];
    const driver: TickDriver<number> = new TickDriver({
      wheel,
      queue: new DueQueue(),
      clock,
      onDue: (entries) => {
        for (const { value } of entries) {
          fired.push(value);
          if (value < 3) {
            wheel.add(`again-${value}`, clock.now() + 500, value + 1);
            driver.poke(clock.now() + 500);
          }
        }
      },
    });
    wheel.add('first', t0 + SECOND, 1);
    driver.start();
    clock.advance(SECOND);
    clock.advance(SECOND);
    clock.advance(SECOND);
    expect(fired).toEqual([1, 2, 3]);
    expect(clock.pendingTimers).toBe(0);
    driver.stop();
  });
});

/** Records every deadline the driver asks for. */
class RecordingClock implements Clock {
  readonly armed: number[] = [];
  constructor(private readonly inner: Clock) {}
  now(): number {
    return this.inner.now();
  }
  setTimer(atMs: number, callback: () => void): TimerHandle {
    this.armed.push(atMs);
    return this.inner.setTimer(atMs, callback);
  }
}

describe('TickDriver with the SystemClock', () => {
  it('survives a 300 ms event-loop stall: every entry once, in order, never early, no drift', async () => {
    const tickMs = 10;
    const clock = new RecordingClock(new SystemClock());
    const wheel = new TimingWheel<number>({ tickMs, slots: 64, startMs: clock.now() });
    const firstTick = wheel.tickOf(clock.now()) + 5;
    const fired: { id: EntryId; dueAtMs: number; at: number }[] = [];
    const batches: DueEntry<number>[][] = [];

    const driver = new TickDriver<number>({
      wheel,
      queue: new DueQueue(),
      clock,
      maxTicksPerBatch: 5,
      onDue: (entries) => {
        const at = clock.now();
        batches.push(entries);
        for (const { id, dueAtMs } of entries) fired.push({ id, dueAtMs, at });
        if (entries.some((entry) => entry.id === 40)) {
          while (clock.now() < at + 300) {
            // Block the event loop, as a long synchronous handler or a GC pause would.
          }
        }
      },
    });
    for (let i = 0; i < 100; i++) {
      // Inside the tick, so firing at the tick's end would show as 2.5 ms late.
      wheel.add(i, (firstTick + i) * tickMs - 2.5, i);
    }
    driver.start();
    try {
      await until(() => fired.length >= 100);
    } finally {
      driver.stop();
    }

    expect(fired.map((entry) => entry.id)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    for (const { dueAtMs, at } of fired) expect(at).toBeGreaterThanOrEqual(dueAtMs);
    // Timers are armed for due times, not tick ends.
    expect(clock.armed.some((deadline) => deadline % tickMs !== 0)).toBe(true);
    // Catching up after the stall: some batch held several entries.
    expect(batches.some((batch) => batch.length > 1)).toBe(true);
    // A schedule of "now + interval" would carry the whole stall to the end; due times do not.
    const last = fired[fired.length - 1];
    expect(last.at - last.dueAtMs).toBeLessThan(150);
    expect(wheel.size).toBe(0);
  });
});
