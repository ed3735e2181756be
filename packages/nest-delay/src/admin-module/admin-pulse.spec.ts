import type { TaskExecutedEvent } from '../delay-observer.js';
import { AdminPulse, PULSE_SECONDS } from './admin-pulse.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

function executed(
  claimMs: number,
  latenessMs: number,
  { limitWaitMs = 0, type = 't' } = {},
): TaskExecutedEvent {
  return {
    id: '1',
    type,
    key: null,
    dueAt: new Date(claimMs - latenessMs - limitWaitMs),
    attempt: 1,
    latenessMs,
    limitWaitMs,
  };
}

describe('AdminPulse', () => {
  it('counts executed tasks in the second of their claim and reads the series up to now', () => {
    const pulse = new AdminPulse();
    pulse.onExecuted(executed(T0 + 100, 3));
    pulse.onExecuted(executed(T0 + 900, 3));
    pulse.onExecuted(executed(T0 + 2_500, 700));
    const view = pulse.view(T0 + 2_999, 4);
    expect(view.executed).toEqual([0, 2, 0, 1]);
    expect(view.until).toBe(new Date(T0 + 2_000).toISOString());
  });

  it('gives lateness percentiles as the upper bound of their bucket', () => {
    const pulse = new AdminPulse();
    for (let i = 0; i < 98; i++) pulse.onExecuted(executed(T0, 4));
    pulse.onExecuted(executed(T0, 800));
    pulse.onExecuted(executed(T0, 90_000));
    const { lateness } = pulse.view(T0);
    expect(lateness).toMatchObject({ count: 100, p50: 5, p90: 5, p99: 1_000 });
    expect(lateness.buckets.at(-1)).toEqual({ leMs: null, count: 1 });
  });

  it('forgets what is older than its window, and files failures by the clock it was given', () => {
    let now = T0;
    const pulse = new AdminPulse(() => now);
    pulse.onExecuted(executed(T0, 1));
    pulse.onFailed({} as never);
    now = T0 + PULSE_SECONDS * 1_000;
    pulse.onDeadLettered({} as never);
    const view = pulse.view(now);
    expect(view.executed.reduce((a, b) => a + b, 0)).toBe(0);
    expect(view.failed.reduce((a, b) => a + b, 0)).toBe(0);
    expect(view.dead.at(-1)).toBe(1);
    expect(view.lateness.count).toBe(0);
  });

  it('keeps waits behind a limit apart from lateness, per type that waited, filed at the claim', () => {
    const pulse = new AdminPulse();
    // Due at T0, waited 40 s behind its limit, claimed 3 ms after that.
    pulse.onExecuted(executed(T0 + 40_000, 3, { type: 'limited', limitWaitMs: 40_000 }));
    for (let i = 0; i < 9; i++)
      pulse.onExecuted(executed(T0 + 40_000, 3, { type: 'limited', limitWaitMs: 200 }));
    pulse.onExecuted(executed(T0 + 40_000, 3, { type: 'free' }));
    const view = pulse.view(T0 + 40_000, 60);
    expect(view.executed.at(-1)).toBe(11);
    expect(view.lateness).toMatchObject({ count: 11, p99: 5 });
    // A type none of whose tasks ever waited has no entry.
    expect(view.limitWait).toEqual([
      expect.objectContaining({ type: 'limited', count: 10, p50: 250, p90: 250, p99: 60_000 }),
    ]);
    expect(view.limitWait[0].maxMs).toBe(40_000);
    // Out of the window, the type stays listed with nothing in it.
    expect(pulse.view(T0 + 40_000 + PULSE_SECONDS * 1_000).limitWait).toEqual([
      expect.objectContaining({ type: 'limited', count: 0, p50: null, maxMs: null }),
    ]);
  });
});
