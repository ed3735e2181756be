import { SystemClock, type Clock, type TimerHandle } from '../clock/index.js';
import { ManualClock } from '../testing/manual-clock.js';
import { TickDriver } from './tick-driver.js';
import { TimingWheel, type DueEntry, type EntryId } from '../wheel/index.js';

const SECOND = 1_000;

function manualSetup(maxTicksPerBatch?: number) {
  const clock = new ManualClock();
  const wheel = new TimingWheel<string>({ tickMs: SECOND, slots: 60, startMs: clock.now() });
  const fired: EntryId[] = [];
  const driver = new TickDriver({
    wheel,
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
  it('sleeps until the deadline of the next due tick and fires then, not a tick early', () => {
    const { clock, wheel, driver, fired, t0 } = manualSetup();
    wheel.add('a', t0 + 2_500, 'x');
    driver.start();
    expect(clock.nextTimerAt).toBe(t0 + 3_000);

    clock.advance(2_999);
    expect(fired).toEqual([]);
    clock.advance(1);
    expect(fired).toEqual(['a']);
    driver.stop();
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
    expect(clock.nextTimerAt).toBe(t0 + 10 * SECOND);

    wheel.add('early', t0 + 1_200, 'x');
    driver.poke(t0 + 1_200);
    expect(clock.nextTimerAt).toBe(t0 + 2 * SECOND); // the deadline of its tick, from the origin
    expect(clock.pendingTimers).toBe(1);

    wheel.add('later', t0 + 20 * SECOND, 'x');
    driver.poke(t0 + 20 * SECOND);
    expect(clock.nextTimerAt).toBe(t0 + 2 * SECOND);

    clock.advance(2 * SECOND);
    expect(fired).toEqual(['early']);
    expect(clock.nextTimerAt).toBe(t0 + 10 * SECOND);
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
    expect(wheel.currentTick).toBe(wheel.tickOf(clock.now()));
    driver.stop();
  });

  it('arms no second timer when poked while catching up', async () => {
    const clock = new ManualClock();
    const t0 = clock.now();
    const wheel = new TimingWheel<string>({ tickMs: SECOND, slots: 60, startMs: t0 });
    const fired: EntryId[] = [];
    const driver: TickDriver<string> = new TickDriver({
      wheel,
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

  it('reports each wake with its deadline and arms only multiples of tickMs', () => {
    const { clock, wheel, t0 } = manualSetup();
    const wakes: [number, number][] = [];
    const driver = new TickDriver({
      wheel,
      clock,
      onDue: () => undefined,
      onWake: (d, n) => wakes.push([d, n]),
    });
    wheel.add('a', t0 + 1_234, 'x');
    driver.start();
    expect(driver.lastDeadline).toBe(t0 + 2_000);
    clock.advance(2_500);
    expect(wakes).toEqual([[t0 + 2_000, t0 + 2_500]]);
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
    const fired: { id: EntryId; tick: number; at: number }[] = [];
    const batches: DueEntry<number>[][] = [];

    const driver = new TickDriver<number>({
      wheel,
      clock,
      maxTicksPerBatch: 5,
      onDue: (entries) => {
        const at = clock.now();
        batches.push(entries);
        for (const { id, tick } of entries) fired.push({ id, tick, at });
        if (entries.some((entry) => entry.id === 40)) {
          while (clock.now() < at + 300) {
            // Block the event loop, as a long synchronous handler or a GC pause would.
          }
        }
      },
    });
    for (let i = 0; i < 100; i++) {
      // Due inside the tick, so the deadline (tick × tickMs) is strictly after the due time.
      wheel.add(i, (firstTick + i) * tickMs - 2.5, i);
    }
    driver.start();
    try {
      await until(() => fired.length >= 100);
    } finally {
      driver.stop();
    }

    expect(fired.map((entry) => entry.id)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(fired.map((entry) => entry.tick)).toEqual(
      Array.from({ length: 100 }, (_, i) => firstTick + i),
    );
    for (const { tick, at } of fired) expect(at).toBeGreaterThanOrEqual(wheel.deadlineOf(tick));
    expect(clock.armed.length).toBeGreaterThan(0);
    for (const deadline of clock.armed) expect(deadline % tickMs).toBe(0);
    // Catching up after the stall: some batch held several ticks' entries.
    expect(batches.some((batch) => batch.length > 1)).toBe(true);
    // A schedule of "now + interval" would carry the whole stall to the end; anchored ticks do not.
    const last = fired[fired.length - 1];
    expect(last.at - wheel.deadlineOf(last.tick)).toBeLessThan(150);
    expect(wheel.size).toBe(0);
  });
});
