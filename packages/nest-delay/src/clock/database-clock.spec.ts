import fc from 'fast-check';
import { ManualClock } from '../testing/manual-clock.js';
import { DatabaseClock } from './database-clock.js';

const START = Date.UTC(2026, 10, 23, 12);

/** A local clock `skewMs` ahead of a database whose time is `database()`. */
function setup(skewMs: number) {
  const local = new ManualClock(START + skewMs);
  const clock = new DatabaseClock(local);
  const database = () => local.now() - skewMs;
  /** A heartbeat: the database reads its clock `upMs` after sending, the reply takes `downMs`. */
  const beat = (upMs: number, downMs: number) => {
    const sentMs = local.now();
    local.advance(upMs);
    const databaseMs = database();
    local.advance(downMs);
    clock.sample({ sentMs, databaseMs, receivedMs: local.now() });
  };
  return { local, clock, database, beat };
}

describe('DatabaseClock', () => {
  it('is the local clock until the first sample', () => {
    const { local, clock } = setup(10_000);
    expect(clock.now()).toBe(local.now());
    expect(clock.measured).toBe(false);
  });

  it("reads the database's time on a host 10 s ahead or behind, never ahead of it", () => {
    for (const skew of [10_000, -10_000]) {
      const { clock, database, beat } = setup(skew);
      beat(2, 3);
      expect(clock.now()).toBeLessThanOrEqual(database());
      // Behind by at most the round trip.
      expect(database() - clock.now()).toBeLessThanOrEqual(5);
      expect(clock.correctionMs).toBeCloseTo(-skew, -1);
    }
  });

  it('trusts the sample with the shortest round trip among the recent ones', () => {
    const { clock, database, beat } = setup(10_000);
    beat(0.5, 0.5);
    const best = clock.correctionMs;
    // A slow reply (a stalled event loop) must not pull the clock back by its delay.
    beat(0.5, 400);
    expect(clock.correctionMs).toBe(best);
    expect(clock.roundTripMs).toBe(1);
    expect(database() - clock.now()).toBeLessThanOrEqual(1);
  });

  it('never steps back: a falling correction makes it stand still until the local clock catches up', () => {
    const { local, clock } = setup(0);
    clock.sample({ sentMs: local.now(), databaseMs: local.now() + 1_000, receivedMs: local.now() });
    const ahead = clock.now();
    // Later samples say the database is only 10 ms ahead after all (the first was wrong).
    for (let i = 0; i < 8; i++)
      clock.sample({ sentMs: local.now(), databaseMs: local.now() + 10, receivedMs: local.now() });
    expect(clock.now()).toBe(ahead);
    local.advance(500);
    expect(clock.now()).toBe(ahead);
    local.advance(600);
    expect(clock.now()).toBe(local.now() + 10);
  });

  it('fires a timer when its own time reaches the deadline, and sooner after the correction rises', () => {
    const { local, clock } = setup(0);
    clock.sample({ sentMs: local.now(), databaseMs: local.now(), receivedMs: local.now() });
    const fired: number[] = [];
    const at = clock.now() + 10_000;
    clock.setTimer(at, () => fired.push(clock.now()));
    local.advance(4_000);
    expect(fired).toEqual([]);
    // The database turns out to be 5 s ahead: the timer is due 5 s sooner by local time.
    clock.sample({ sentMs: local.now(), databaseMs: local.now() + 5_000, receivedMs: local.now() });
    local.advance(999);
    expect(fired).toEqual([]);
    local.advance(1);
    expect(fired).toEqual([at]);
  });

  it('a cancelled timer never fires, even when a new sample re-arms the others', () => {
    const { local, clock } = setup(0);
    let fired = false;
    const handle = clock.setTimer(local.now() + 1_000, () => (fired = true));
    handle.cancel();
    clock.sample({ sentMs: local.now(), databaseMs: local.now() + 5_000, receivedMs: local.now() });
    local.advance(10_000);
    expect(fired).toBe(false);
  });

  it('is never ahead of the database and never goes back, whatever the skew, round trips and steps', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -60_000, max: 60_000 }),
        fc.array(
          fc.record({
            upMs: fc.integer({ min: 0, max: 200 }),
            downMs: fc.integer({ min: 0, max: 200 }),
            idleMs: fc.integer({ min: 0, max: 20_000 }),
            // The database's clock stepped (an NTP correction there) by this much.
            stepMs: fc.integer({ min: -5_000, max: 5_000 }),
          }),
          { minLength: 1, maxLength: 30 },
        ),
        (skew, beats) => {
          const local = new ManualClock(START);
          const clock = new DatabaseClock(local);
          let databaseOffset = -skew;
          // A clock that never goes back can be ahead of one that stepped back, by that step.
          let steppedBack = 0;
          let last = -Infinity;
          for (const { upMs, downMs, idleMs, stepMs } of beats) {
            databaseOffset += stepMs;
            steppedBack += Math.max(0, -stepMs);
            const sentMs = local.now();
            local.advance(upMs);
            const databaseMs = local.now() + databaseOffset;
            local.advance(downMs);
            clock.sample({ sentMs, databaseMs, receivedMs: local.now() });
            local.advance(idleMs);
            const now = clock.now();
            expect(now).toBeGreaterThanOrEqual(last);
            last = now;
            expect(now).toBeLessThanOrEqual(local.now() + databaseOffset + steppedBack);
          }
        },
      ),
    );
  });
});
