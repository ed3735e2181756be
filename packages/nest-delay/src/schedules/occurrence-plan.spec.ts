import fc from 'fast-check';
import {
  MAX_PLANNED_PER_ROUND,
  overdueKept,
  planOccurrences,
  type CatchUp,
  type OccurrencePlan,
} from './occurrence-plan.js';
import { Recurrence, type RecurrenceSpec } from './recurrence.js';
import { planRetryDelayMs } from './schedule-planner.js';
import { PLAN_RETRY_MAX_MS } from '../context/tuning.js';
import { WindowPolicy } from '../tasks/window-policy.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T0 = Date.UTC(2026, 0, 1, 12); // a whole hour, so every 1 min/5 min/1 h falls on it

const everyMinute = Recurrence.of({ everyMs: MINUTE });

/** A planner round at `nowMs` with a 1-hour window and a 1-minute grace, as the planner calls it. */
function plan(
  nextMs: number,
  nowMs: number,
  catchUp: CatchUp,
  {
    recurrence = everyMinute,
    lastMs = null as number | null,
    horizonMs = nowMs + HOUR,
    graceMs = MINUTE,
    catchUpCap = 100,
  } = {},
): OccurrencePlan {
  return planOccurrences(recurrence, nextMs, lastMs, nowMs, horizonMs, graceMs, {
    catchUp,
    catchUpCap,
  });
}

const times = (p: OccurrencePlan) => p.run.map((o) => o.atMs);

describe('planOccurrences on time (nothing missed)', () => {
  it('plans every occurrence from the next one up to the horizon, not at it, and keeps the horizon one as next', () => {
    const p = plan(T0, T0 - 5 * MINUTE, 'one', { horizonMs: T0 + 3 * MINUTE });
    expect(times(p)).toEqual([T0, T0 + MINUTE, T0 + 2 * MINUTE]);
    expect(p.nextMs).toBe(T0 + 3 * MINUTE);
    expect(p.missed).toBe(0);
  });

  it('gives each occurrence the one before it, and the first the last one planned before', () => {
    const p = plan(T0, T0, 'one', { lastMs: T0 - MINUTE, horizonMs: T0 + 2 * MINUTE + 1 });
    expect(p.run).toEqual([
      { atMs: T0, previousMs: T0 - MINUTE },
      { atMs: T0 + MINUTE, previousMs: T0 },
      { atMs: T0 + 2 * MINUTE, previousMs: T0 + MINUTE },
    ]);
  });

  it('gives the very first occurrence of a schedule no previous one', () => {
    expect(plan(T0, T0, 'one').run[0]).toEqual({ atMs: T0, previousMs: null });
  });

  it('plans nothing when the next occurrence is beyond the horizon', () => {
    expect(plan(T0 + 2 * HOUR, T0, 'all')).toEqual({ run: [], missed: 0, nextMs: T0 + 2 * HOUR });
  });

  it('runs an occurrence late by no more than the grace, whatever the policy', () => {
    for (const catchUp of ['skip', 'one', 'all'] as const) {
      const p = plan(T0, T0 + MINUTE, catchUp, { horizonMs: T0 + 1 });
      expect({ catchUp, run: times(p), missed: p.missed }).toEqual({
        catchUp,
        run: [T0],
        missed: 0,
      });
    }
  });

  it('plans at most 1000 occurrences a round; the rest stay for the next round', () => {
    const everySecond = Recurrence.of({ everyMs: 1000 });
    const p = plan(T0, T0, 'one', { recurrence: everySecond });
    expect(p.run).toHaveLength(MAX_PLANNED_PER_ROUND);
    expect(p.nextMs).toBe(T0 + MAX_PLANNED_PER_ROUND * 1000);
  });

  it('plans the last occurrences of a rule that ends, then has no next', () => {
    const lastTwo = {
      next: (afterMs: number) => (afterMs < T0 + MINUTE ? afterMs + MINUTE : undefined),
    };
    const p = plan(T0, T0, 'one', { recurrence: lastTwo as unknown as Recurrence });
    expect(times(p)).toEqual([T0, T0 + MINUTE]);
    expect(p.nextMs).toBeUndefined();
  });
});

describe('planOccurrences after missing occurrences (no instance ran, or paused)', () => {
  // Down from T0 to T0 + 10 min: T0 .. T0 + 8 min are late by more than the 1-minute grace.
  const now = T0 + 10 * MINUTE;
  const missedTimes = Array.from({ length: 9 }, (_, i) => T0 + i * MINUTE);

  it("with 'skip', runs none of them and counts them all as missed", () => {
    const p = plan(T0, now, 'skip', { horizonMs: now + 2 * MINUTE });
    expect(p.missed).toBe(9);
    expect(times(p)).toEqual([T0 + 9 * MINUTE, now, now + MINUTE]);
  });

  it("with 'one', runs only the latest of them, which knows the missed one before it", () => {
    const p = plan(T0, now, 'one', { horizonMs: now });
    expect(p.missed).toBe(8);
    expect(p.run).toEqual([
      { atMs: T0 + 8 * MINUTE, previousMs: T0 + 7 * MINUTE },
      { atMs: T0 + 9 * MINUTE, previousMs: T0 + 8 * MINUTE },
    ]);
  });

  it("with 'all', runs them all when there are no more than the cap", () => {
    const p = plan(T0, now, 'all', { horizonMs: now, catchUpCap: 9 });
    expect(p.missed).toBe(0);
    expect(times(p)).toEqual([...missedTimes, T0 + 9 * MINUTE]);
  });

  it("with 'all', runs the latest `catchUpCap` of them and counts the earlier ones as missed", () => {
    const p = plan(T0, now, 'all', { horizonMs: now, catchUpCap: 3 });
    expect(p.missed).toBe(6);
    expect(times(p)).toEqual([...missedTimes.slice(6), T0 + 9 * MINUTE]);
    expect(p.run[0].previousMs).toBe(T0 + 5 * MINUTE);
  });

  it.each(['one', 'all'] as const)(
    "with '%s', still runs the latest missed ones after an outage of more than a million occurrences",
    (catchUp) => {
      // An every-second schedule paused for two weeks: 1,209,600 missed occurrences.
      const everySecond = Recurrence.of({ everyMs: 1000 });
      const back = T0 + 14 * 24 * HOUR;
      const p = plan(T0, back, catchUp, {
        recurrence: everySecond,
        horizonMs: back,
        catchUpCap: 3,
      });
      const latest = back - MINUTE - 1000; // the last one late by more than the grace
      const lateRun = catchUp === 'one' ? [latest] : [latest - 2000, latest - 1000, latest];
      const onTime = Array.from({ length: 60 }, (_, i) => latest + (i + 1) * 1000);
      expect(times(p)).toEqual([...lateRun, ...onTime]);
      // The latest one still knows the (missed) one before it.
      expect(p.run[lateRun.length - 1].previousMs).toBe(latest - 1000);
    },
  );

  it('counts an occurrence late by 1 ms more than the grace as missed', () => {
    const p = plan(T0, T0 + MINUTE + 1, 'skip', { horizonMs: T0 + MINUTE + 2 });
    expect(p.missed).toBe(1);
    expect(times(p)).toEqual([T0 + MINUTE]);
  });
});

// ---- Properties, against the schedule's own sequence of occurrences ----

/** Rules cheap enough to walk hours of (croner costs up to half a millisecond a call). */
const RULES: RecurrenceSpec[] = [
  { everyMs: 1000 },
  { everyMs: 7000 },
  { everyMs: MINUTE },
  { everyMs: 5 * MINUTE },
  { everyMs: HOUR },
  { cron: '*/10 * * * *', timeZone: 'Europe/Berlin' },
  { cron: '0 * * * *', timeZone: 'America/New_York' },
  { cron: '30 2 * * *', timeZone: 'Europe/Berlin' },
  { cron: '0 9 * * 1-5', timeZone: 'America/New_York' },
];

const round = fc.record({
  spec: fc.constantFrom(...RULES),
  // The schedule's next occurrence: the first after this instant (near DST changes of 2026 or not).
  anchorMs: fc.constantFrom(
    Date.UTC(2026, 2, 28, 22), // 3 hours before Europe/Berlin springs forward
    Date.UTC(2026, 9, 24, 22), // 3 hours before Europe/Berlin falls back
    Date.UTC(2026, 10, 1, 2), // 4 hours before America/New_York falls back
    Date.UTC(2026, 5, 10, 7, 13, 5),
  ),
  hasLast: fc.boolean(),
  // Where "now" is from the next occurrence: before it (an early round) or up to 8 hours after it.
  nowOffsetMs: fc.integer({ min: -2 * HOUR, max: 8 * HOUR }),
  windowMs: fc.integer({ min: 0, max: 2 * HOUR }),
  graceMs: fc.integer({ min: 0, max: 10 * MINUTE }),
  catchUp: fc.constantFrom<CatchUp>('skip', 'one', 'all'),
  catchUpCap: fc.integer({ min: 1, max: 20 }),
});

/** The rule of a spec, its answers remembered: the rounds below ask the same few rules the same questions. */
const remembered = new Map<RecurrenceSpec, Recurrence>();
function rememberedRecurrence(spec: RecurrenceSpec): Recurrence {
  let recurrence = remembered.get(spec);
  if (recurrence === undefined) {
    const rule = Recurrence.of(spec);
    const answers = new Map<number, number | undefined>();
    const next = (afterMs: number) => {
      if (!answers.has(afterMs)) answers.set(afterMs, rule.next(afterMs));
      return answers.get(afterMs);
    };
    recurrence = { next } as unknown as Recurrence;
    remembered.set(spec, recurrence);
  }
  return recurrence;
}

type Round = typeof round extends fc.Arbitrary<infer R> ? R : never;

/** One generated planner round, what it planned, and the schedule's own sequence to check it against. */
function planRound(r: Round) {
  const recurrence = rememberedRecurrence(r.spec);
  const nextMs = recurrence.next(r.anchorMs)!;
  const lastMs = r.hasLast ? nextMs - 1234 : null;
  const nowMs = nextMs + r.nowOffsetMs;
  const horizonMs = nowMs + r.windowMs;
  const cutoffMs = nowMs - r.graceMs;
  const p = planOccurrences(recurrence, nextMs, lastMs, nowMs, horizonMs, r.graceMs, r);
  // The schedule's own sequence from its next occurrence up to the first at or past the horizon.
  const sequence: number[] = [];
  for (let at: number | undefined = nextMs; at !== undefined; at = recurrence.next(at)) {
    sequence.push(at);
    if (at >= horizonMs) break;
  }
  const late = sequence.filter((at) => at < cutoffMs);
  return { p, nextMs, lastMs, horizonMs, cutoffMs, sequence, late };
}

const RUNS = { numRuns: 100 };

describe('planOccurrences for any rule, round and policy', () => {
  it('plans occurrences in strictly increasing order, before the horizon, none before the next occurrence', () => {
    fc.assert(
      fc.property(round, (r) => {
        const { p, nextMs, horizonMs } = planRound(r);
        const at = times(p);
        // One expect for the lot: an expect per occurrence costs more than the planning.
        const wrong = at.filter(
          (t, i) => t < nextMs || t >= horizonMs || (i > 0 && t <= at[i - 1]),
        );
        expect(wrong).toEqual([]);
      }),
      RUNS,
    );
  });

  it('accounts for every occurrence in order: the missed ones, then the planned ones, then the next', () => {
    fc.assert(
      fc.property(round, (r) => {
        const { p, sequence, lastMs } = planRound(r);
        expect(times(p)).toEqual(sequence.slice(p.missed, p.missed + p.run.length));
        expect(p.nextMs).toBe(sequence[p.missed + p.run.length]);
        // Each planned occurrence names the one before it in the sequence, run or missed.
        const before = [lastMs, ...sequence];
        expect(p.run.map((o) => o.previousMs)).toEqual(
          before.slice(p.missed, p.missed + p.run.length),
        );
      }),
      RUNS,
    );
  });

  it('plans every occurrence that is not late, up to the horizon', () => {
    fc.assert(
      fc.property(round, (r) => {
        const { p, cutoffMs, horizonMs } = planRound(r);
        expect(p.run.length).toBeLessThanOrEqual(MAX_PLANNED_PER_ROUND);
        if (p.run.length < MAX_PLANNED_PER_ROUND && p.nextMs !== undefined) {
          expect(p.nextMs).toBeGreaterThanOrEqual(horizonMs);
        }
        const notLate = times(p).filter((at) => at >= cutoffMs);
        const lateRun = p.run.length - notLate.length;
        expect(times(p).slice(lateRun)).toEqual(notLate);
      }),
      RUNS,
    );
  });

  it("of the late occurrences, runs none with 'skip', the latest with 'one', the latest `catchUpCap` with 'all'", () => {
    fc.assert(
      fc.property(round, (r) => {
        const { p, late, cutoffMs } = planRound(r);
        const lateRun = times(p).filter((at) => at < cutoffMs);
        const keep = { skip: 0, one: 1, all: r.catchUpCap }[r.catchUp];
        expect(lateRun).toEqual(late.slice(Math.max(0, late.length - keep)));
        expect(p.missed + lateRun.length).toBe(late.length);
      }),
      RUNS,
    );
  });
});

const LEASE = 30_000;
const overdueAfterMs = (leaseMs: number) =>
  new WindowPolicy({ windowMs: 60_000, instanceId: 'me', leaseMs }).overdueAfterMs;
/** The planner's and the verdict's test: overdue by more than two leases. */
const pastGrace = (dueAtMs: number, nowMs: number) => dueAtMs < nowMs - overdueAfterMs(LEASE);

describe('catch-up', () => {
  it('applies to an occurrence overdue by more than two leases, not by two leases', () => {
    expect(overdueAfterMs(LEASE)).toBe(60_000);
    expect(pastGrace(0, 60_000)).toBe(false);
    expect(pastGrace(0, 60_001)).toBe(true);
  });

  it('keeps none, the latest, or up to the cap of the occurrences past the grace', () => {
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
      const late = plan.run.filter((o) => pastGrace(o.atMs, now));
      expect(late).toHaveLength(overdueKept(policy));
      // Past the grace: 1 s to 239 s (240 s is due exactly two leases before now).
      expect(plan.missed).toBe(239 - overdueKept(policy));
      expect(plan.run.filter((o) => !pastGrace(o.atMs, now))[0].atMs).toBe(240_000);
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
