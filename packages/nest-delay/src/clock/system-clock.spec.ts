import { SystemClock } from './index.js';

describe('SystemClock', () => {
  const clock = new SystemClock();

  it('reads epoch milliseconds that never go backwards', () => {
    expect(Math.abs(clock.now() - Date.now())).toBeLessThan(1_000);
    let previous = clock.now();
    for (let i = 0; i < 10_000; i++) {
      const now = clock.now();
      expect(now).toBeGreaterThanOrEqual(previous);
      previous = now;
    }
  });

  it('never fires a timer before its deadline', async () => {
    const start = clock.now();
    const deadlines = [20, 27.5, 33, 41, 50].map((ms) => start + ms);
    const firedAt = await Promise.all(
      deadlines.map(
        (atMs) =>
          new Promise<number>((resolve) => clock.setTimer(atMs, () => resolve(clock.now()))),
      ),
    );
    firedAt.forEach((at, i) => expect(at).toBeGreaterThanOrEqual(deadlines[i]));
  });

  it('does not fire a cancelled timer', async () => {
    let fired = false;
    const timer = clock.setTimer(clock.now() + 20, () => (fired = true));
    timer.cancel();
    await new Promise<void>((resolve) => clock.setTimer(clock.now() + 40, resolve));
    expect(fired).toBe(false);
  });

  it("arms an unref'd setTimeout, capped at 2^31-1 ms so far deadlines do not fire at once", () => {
    const realSetTimeout = globalThis.setTimeout;
    const armed: { delay: number; timeout: ReturnType<typeof setTimeout> }[] = [];
    globalThis.setTimeout = ((callback: () => void, delay: number) => {
      const timeout = realSetTimeout(callback, delay);
      armed.push({ delay, timeout });
      return timeout;
    }) as typeof setTimeout;
    try {
      const timer = clock.setTimer(clock.now() + 40 * 24 * 3_600_000, () => undefined);
      expect(armed).toHaveLength(1);
      expect(armed[0].delay).toBe(2 ** 31 - 1);
      expect(armed[0].timeout.hasRef()).toBe(false);
      timer.cancel();
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
  });

  it('sleeps again when setTimeout wakes it early', async () => {
    const realSetTimeout = globalThis.setTimeout;
    let wakes = 0;
    // The first wake comes at once, long before its time, as a capped or
    // coarse timer's might (half the delay was not early enough on a loaded
    // machine, where the wake itself came late); the later ones as asked.
    globalThis.setTimeout = ((callback: () => void, delay: number) =>
      realSetTimeout(
        () => {
          wakes++;
          callback();
        },
        wakes === 0 ? 0 : delay,
      )) as typeof setTimeout;
    try {
      const atMs = clock.now() + 500;
      const firedAt = await new Promise<number>((resolve) =>
        clock.setTimer(atMs, () => resolve(clock.now())),
      );
      expect(firedAt).toBeGreaterThanOrEqual(atMs);
      expect(wakes).toBeGreaterThan(1);
    } finally {
      globalThis.setTimeout = realSetTimeout;
    }
  });

  it('rejects a non-finite deadline', () => {
    expect(() => clock.setTimer(Infinity, () => undefined)).toThrow(TypeError);
  });
});
