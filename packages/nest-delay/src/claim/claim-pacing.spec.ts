import { ClaimPacing } from './claim-pacing.js';

/** Feeds `count` starts of `ms` each, `gapMs` apart from `fromMs`; returns the time after the last. */
function starts(
  pacing: ClaimPacing,
  fromMs: number,
  count: number,
  ms: number,
  gapMs = 60,
): number {
  let now = fromMs;
  for (let i = 0; i < count; i++, now += gapMs) pacing.started(now, ms);
  return now;
}

describe('ClaimPacing', () => {
  it('allows every claim until it has seen a start', () => {
    expect(new ClaimPacing(8).limit()).toBe(8);
  });

  it('learns nothing from its first 20 starts (new connections, first PREPAREs)', () => {
    const pacing = new ClaimPacing(8);
    const now = starts(pacing, 0, 1, 50);
    starts(pacing, now, 19, 1);
    expect(pacing.limit()).toBe(8);
  });

  it('keeps every claim while starts stay near their best', () => {
    const pacing = new ClaimPacing(8);
    starts(pacing, 0, 200, 1.2);
    expect(pacing.limit()).toBe(8);
  });

  it('takes claims away one at a time while starts are more than twice their best, down to one', () => {
    const pacing = new ClaimPacing(8);
    let now = starts(pacing, 0, 30, 1);
    now = starts(pacing, now, 3, 10);
    const after = pacing.limit();
    expect(after).toBeLessThan(8);
    expect(after).toBeGreaterThanOrEqual(5);
    starts(pacing, now, 100, 10);
    expect(pacing.limit()).toBe(1);
  });

  it('steps at most once every 50 ms, however many claims start', () => {
    const pacing = new ClaimPacing(8);
    const now = starts(pacing, 0, 30, 1);
    starts(pacing, now, 50, 10, 1);
    expect(pacing.limit()).toBe(7);
  });

  it('gives claims back once starts are quick again, but only while ids were held back for them', () => {
    const pacing = new ClaimPacing(8);
    let now = starts(pacing, 0, 30, 1);
    now = starts(pacing, now, 100, 10);
    expect(pacing.limit()).toBe(1);
    now = starts(pacing, now, 50, 1);
    expect(pacing.limit()).toBe(1);
    for (let i = 0; i < 20; i++, now += 60) {
      pacing.heldBack(now);
      pacing.started(now, 1);
    }
    expect(pacing.limit()).toBe(8);
  });

  it('allows one more when ids were held back and no claim started for 100 ms (long claims in flight)', () => {
    const pacing = new ClaimPacing(8);
    let now = starts(pacing, 0, 30, 1);
    now = starts(pacing, now, 100, 10);
    expect(pacing.limit()).toBe(1);
    const last = now - 60;
    // Asked again when the quiet would be long enough, not stepped yet.
    expect(pacing.heldBack(last + 40)).toBe(60);
    expect(pacing.limit()).toBe(1);
    expect(pacing.heldBack(last + 100)).toBe(0);
    expect(pacing.limit()).toBe(2);
    // The step itself starts a new quiet.
    expect(pacing.heldBack(last + 100)).toBe(100);
    expect(pacing.limit()).toBe(2);
  });

  it('asks nothing more when every claim is allowed', () => {
    const pacing = new ClaimPacing(8);
    starts(pacing, 0, 30, 1);
    expect(pacing.heldBack(10_000)).toBeUndefined();
  });

  it('never allows more than the concurrency it is asked for', () => {
    const pacing = new ClaimPacing(3);
    let now = starts(pacing, 0, 30, 1);
    // Quick starts with ids held back ask for more: never past three.
    for (let i = 0; i < 20; i++, now += 200) {
      pacing.heldBack(now);
      pacing.started(now, 1);
    }
    expect(pacing.limit()).toBe(3);
  });

  it('forgets a best start after its windows, so a slower network becomes the new normal', () => {
    const pacing = new ClaimPacing(8);
    let now = starts(pacing, 0, 30, 1);
    // Starts settle at 5 ms for over a minute: twice the 30 s window.
    now = starts(pacing, now, 1200, 5);
    for (let i = 0; i < 20; i++, now += 60) {
      pacing.heldBack(now);
      pacing.started(now, 5);
    }
    expect(pacing.limit()).toBe(8);
  });
});
