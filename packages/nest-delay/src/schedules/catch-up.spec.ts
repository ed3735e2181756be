import { isOverdue, overdueAfterMs, overdueKept } from './catch-up.js';
import { planOccurrences } from './occurrence-plan.js';
import { Recurrence } from './recurrence.js';
import { planRetryDelayMs } from './plan-failure.js';
import { PLAN_RETRY_MAX_MS } from '../context/tuning.js';

const LEASE = 30_000;

describe('catch-up', () => {
  it('an occurrence is overdue once due more than two leases ago, not at two leases', () => {
    expect(overdueAfterMs(LEASE)).toBe(60_000);
    expect(isOverdue(0, 60_000, LEASE)).toBe(false);
    expect(isOverdue(0, 60_001, LEASE)).toBe(true);
  });

  it('keeps none, the latest, or up to the cap of the overdue occurrences', () => {
    expect(overdueKept({ catchUp: 'skip', catchUpCap: 100 })).toBe(0);
    expect(overdueKept({ catchUp: 'one', catchUpCap: 100 })).toBe(1);
    expect(overdueKept({ catchUp: 'all', catchUpCap: 7 })).toBe(7);
  });

  it('the planner applies the same definition to what it had not planned yet', () => {
    const everySecond = Recurrence.of({ everyMs: 1000 });
    const now = 300_000;
    const grace = overdueAfterMs(LEASE);
    for (const catchUp of ['skip', 'one', 'all'] as const) {
      const policy = { catchUp, catchUpCap: 10 };
      const plan = planOccurrences(everySecond, 1000, 0, now, now + 1000, grace, policy);
      const late = plan.run.filter((o) => isOverdue(o.atMs, now, LEASE));
      expect(late).toHaveLength(overdueKept(policy));
      // Overdue: 1 s to 239 s (240 s is due exactly two leases before now).
      expect(plan.missed).toBe(239 - overdueKept(policy));
      expect(plan.run.filter((o) => !isOverdue(o.atMs, now, LEASE))[0].atMs).toBe(240_000);
    }
  });
});

describe('a schedule whose plan failed', () => {
  it('is set aside a minute, doubling each failure, at most an hour', () => {
    expect([0, 1, 2, 5, 6, 100].map(planRetryDelayMs)).toEqual([
      60_000,
      120_000,
      240_000,
      1_920_000,
      PLAN_RETRY_MAX_MS,
      PLAN_RETRY_MAX_MS,
    ]);
  });
});
