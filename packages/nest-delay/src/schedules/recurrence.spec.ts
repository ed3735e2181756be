import { jest } from '@jest/globals';
import fc from 'fast-check';
import { DelayValidationError } from '../errors/delay-errors.js';
import { Recurrence } from './recurrence.js';

/** An instant as a reader of that zone's clocks sees it: '2026-03-29 03:00:00 GMT+2'. */
function wall(ms: number, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    timeZoneName: 'shortOffset',
  }).formatToParts(ms);
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)!.value;
  return `${part('year')}-${part('month')}-${part('day')} ${part('hour')}:${part('minute')}:${part('second')} ${part('timeZoneName')}`;
}

/** The first `count` occurrences after `fromMs`, each computed from the one before. */
function occurrences(recurrence: Recurrence, fromMs: number, count: number): number[] {
  const out: number[] = [];
  let at: number | undefined = fromMs;
  while (out.length < count) {
    at = recurrence.next(at);
    if (at === undefined) break;
    out.push(at);
  }
  return out;
}

const cron = (expression: string, timeZone: string) =>
  Recurrence.of({ cron: expression, timeZone });

describe('Recurrence across daylight saving time in Europe/Berlin (2026)', () => {
  const zone = 'Europe/Berlin';

  it('runs a time that does not exist on the spring-forward day once, at the first valid time after it', () => {
    const daily = cron('30 2 * * *', zone);
    const days = occurrences(daily, Date.UTC(2026, 2, 27, 12), 3).map((at) => wall(at, zone));
    expect(days).toEqual([
      '2026-03-28 02:30:00 GMT+1',
      '2026-03-29 03:00:00 GMT+2', // 02:30 is skipped by the clocks: 03:00 summer time
      '2026-03-30 02:30:00 GMT+2',
    ]);
  });

  it('runs a time that exists twice on the fall-back day once, at its first (summer time)', () => {
    const daily = cron('30 2 * * *', zone);
    const days = occurrences(daily, Date.UTC(2026, 9, 23, 12), 3).map((at) => wall(at, zone));
    expect(days).toEqual([
      '2026-10-24 02:30:00 GMT+2',
      '2026-10-25 02:30:00 GMT+2',
      '2026-10-26 02:30:00 GMT+1',
    ]);
  });

  it('runs an hourly schedule in each of the two real hours of the repeated hour', () => {
    const hourly = cron('0 * * * *', zone);
    const runs = occurrences(hourly, Date.UTC(2026, 9, 24, 22, 30), 4);
    expect(runs.map((at) => wall(at, zone))).toEqual([
      '2026-10-25 01:00:00 GMT+2',
      '2026-10-25 02:00:00 GMT+2',
      '2026-10-25 02:00:00 GMT+1',
      '2026-10-25 03:00:00 GMT+1',
    ]);
    expect(gaps(runs)).toEqual([3_600_000, 3_600_000, 3_600_000]);
  });

  it('runs an hourly schedule every real hour on the spring-forward day, none in the hour that does not exist', () => {
    const hourly = cron('0 * * * *', zone);
    const runs = occurrences(hourly, Date.UTC(2026, 2, 28, 23, 30), 3);
    expect(runs.map((at) => wall(at, zone))).toEqual([
      '2026-03-29 01:00:00 GMT+1',
      '2026-03-29 03:00:00 GMT+2',
      '2026-03-29 04:00:00 GMT+2',
    ]);
    expect(gaps(runs)).toEqual([3_600_000, 3_600_000]);
  });
});

describe('Recurrence across daylight saving time in America/New_York (2026)', () => {
  const zone = 'America/New_York';

  it('runs a time that does not exist on the spring-forward day once, at the first valid time after it', () => {
    const daily = cron('30 2 * * *', zone);
    const days = occurrences(daily, Date.UTC(2026, 2, 6, 12), 3).map((at) => wall(at, zone));
    expect(days).toEqual([
      '2026-03-07 02:30:00 GMT-5',
      '2026-03-08 03:00:00 GMT-4',
      '2026-03-09 02:30:00 GMT-4',
    ]);
  });

  it('runs a time that exists twice on the fall-back day once, at its first (daylight time)', () => {
    const daily = cron('30 1 * * *', zone);
    const days = occurrences(daily, Date.UTC(2026, 9, 30, 12), 3).map((at) => wall(at, zone));
    expect(days).toEqual([
      '2026-10-31 01:30:00 GMT-4',
      '2026-11-01 01:30:00 GMT-4',
      '2026-11-02 01:30:00 GMT-5',
    ]);
  });

  it('runs an hourly schedule in each of the two real hours of the repeated hour', () => {
    const hourly = cron('0 * * * *', zone);
    const runs = occurrences(hourly, Date.UTC(2026, 10, 1, 3, 30), 4);
    expect(runs.map((at) => wall(at, zone))).toEqual([
      '2026-11-01 00:00:00 GMT-4',
      '2026-11-01 01:00:00 GMT-4',
      '2026-11-01 01:00:00 GMT-5',
      '2026-11-01 02:00:00 GMT-5',
    ]);
    expect(gaps(runs)).toEqual([3_600_000, 3_600_000, 3_600_000]);
  });

  it('keeps a seconds schedule to its real-time step through the repeated hour', () => {
    const everyTwentySeconds = cron('*/20 * * * * *', zone);
    const runs = occurrences(everyTwentySeconds, Date.UTC(2026, 10, 1, 5, 59, 30), 4);
    expect(runs.map((at) => new Date(at).toISOString())).toEqual([
      '2026-11-01T05:59:40.000Z',
      '2026-11-01T06:00:00.000Z', // 01:00 EST, the second 01:00
      '2026-11-01T06:00:20.000Z',
      '2026-11-01T06:00:40.000Z',
    ]);
  });
});

describe('Recurrence every interval', () => {
  it('falls on multiples of the interval since the epoch, whenever it is asked', () => {
    const fiveMinutes = Recurrence.of({ everyMs: 300_000 });
    expect(fiveMinutes.next(Date.UTC(2026, 0, 1, 10, 2, 17, 5))).toBe(Date.UTC(2026, 0, 1, 10, 5));
    expect(fiveMinutes.next(Date.UTC(2026, 0, 1, 10, 4, 59, 999))).toBe(
      Date.UTC(2026, 0, 1, 10, 5),
    );
  });

  it('from an occurrence, the next is one interval later (never the same instant)', () => {
    const fiveMinutes = Recurrence.of({ everyMs: 300_000 });
    expect(fiveMinutes.next(Date.UTC(2026, 0, 1, 10, 5))).toBe(Date.UTC(2026, 0, 1, 10, 10));
  });

  it('is a step of real time through daylight saving changes: it has no zone', () => {
    const hour = Recurrence.of({ everyMs: 3_600_000 });
    expect(gaps(occurrences(hour, Date.UTC(2026, 9, 24, 23, 30), 5))).toEqual(
      Array(4).fill(3_600_000),
    );
  });

  it('falls on a multiple since the epoch, strictly later and at most one interval later, for any instant', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1000, max: 40 * 86_400_000 }),
        fc.integer({ min: 0, max: Date.UTC(2100, 0, 1) }),
        (everyMs, afterMs) => {
          const at = Recurrence.of({ everyMs }).next(afterMs)!;
          expect(at % everyMs).toBe(0);
          expect(at).toBeGreaterThan(afterMs);
          expect(at - afterMs).toBeLessThanOrEqual(everyMs);
        },
      ),
    );
  });
});

describe('Recurrence computes the next occurrence from the previous one, never from now', () => {
  afterEach(() => jest.useRealTimers());

  it.each([
    ['cron in Europe/Berlin', { cron: '30 2 * * *', timeZone: 'Europe/Berlin' }],
    ['every 7 seconds', { everyMs: 7000 }],
  ])('gives the same occurrences after a given one whatever the current time (%s)', (_, spec) => {
    const previous = Date.UTC(2026, 2, 27, 0, 30);
    const seenAt = [Date.UTC(2020, 0, 1), Date.UTC(2026, 2, 29, 12), Date.UTC(2031, 5, 1)].map(
      (nowMs) => {
        jest.useFakeTimers({ now: nowMs });
        return occurrences(Recurrence.of(spec), previous, 5);
      },
    );
    expect(seenAt[1]).toEqual(seenAt[0]);
    expect(seenAt[2]).toEqual(seenAt[0]);
    // Occurrences in the past of "now" are still given: a late planner skips none.
    expect(seenAt[2][0]).toBeLessThan(Date.UTC(2031, 5, 1));
  });
});

/** Zones with unusual rules: 30-minute DST (Lord Howe), DST at midnight (Santiago), southern DST, odd offsets. */
const ZONES = [
  'UTC',
  'Europe/Berlin',
  'America/New_York',
  'Australia/Lord_Howe',
  'America/Santiago',
  'Australia/Sydney',
  'Asia/Kolkata',
  'Pacific/Chatham',
  'America/St_Johns',
];

/** Expressions that land on the hours DST moves (0-3 h), with and without seconds. */
const cronExpression = fc
  .record({
    second: fc.option(fc.constantFrom('0', '30', '*/15', '*/20'), { nil: undefined }),
    minute: fc.constantFrom('*', '0', '30', '45', '*/5', '15,45', '0-10'),
    hour: fc.constantFrom('*', '0', '1', '2', '3', '*/2', '1-3', '0,12'),
    dayOfMonth: fc.constantFrom('*', '*', '*', '1', '15', '29', '31'),
    month: fc.constantFrom('*', '*', '3', '4', '9', '10', '11', '3,10'),
    dayOfWeek: fc.constantFrom('*', '*', '*', '0', '1-5', '6'),
  })
  .map((f) =>
    [f.second, f.minute, f.hour, f.dayOfMonth, f.month, f.dayOfWeek]
      .filter((field) => field !== undefined)
      .join(' '),
  );

/** Instants close to DST changes of the zones above (2026), and anywhere from 2000 to 2040. */
const DST_CHANGES = [
  Date.UTC(2026, 2, 29, 1), // Europe/Berlin spring forward
  Date.UTC(2026, 9, 25, 1), // Europe/Berlin fall back
  Date.UTC(2026, 2, 8, 7), // America/New_York spring forward
  Date.UTC(2026, 10, 1, 6), // America/New_York fall back
  Date.UTC(2026, 3, 4, 15), // Australia/Lord_Howe fall back by 30 minutes
  Date.UTC(2026, 8, 6, 4), // America/Santiago spring forward at midnight
];
const instant = fc.oneof(
  fc
    .tuple(fc.constantFrom(...DST_CHANGES), fc.integer({ min: -6 * 3_600_000, max: 6 * 3_600_000 }))
    .map(([change, offset]) => change + offset),
  fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2040, 0, 1) }),
);

const rule = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ cron: cronExpression, timeZone: fc.constantFrom(...ZONES) }),
  },
  { weight: 1, arbitrary: fc.record({ everyMs: fc.integer({ min: 1000, max: 7 * 86_400_000 }) }) },
);

/** croner costs tens of microseconds a call: enough runs to find a DST corner, few enough to stay fast. */
const RUNS = { numRuns: 150 };

describe('Recurrence for any rule, zone and instant', () => {
  it('gives an occurrence strictly after the instant it is asked from (a cron one on a whole second)', () => {
    fc.assert(
      fc.property(rule, instant, (spec, afterMs) => {
        const at = Recurrence.of(spec).next(afterMs);
        if (at === undefined) return;
        expect(at).toBeGreaterThan(afterMs);
        if ('cron' in spec) expect(at % 1000).toBe(0);
      }),
      RUNS,
    );
  });

  it('never gives an earlier occurrence for a later instant (monotone)', () => {
    fc.assert(
      fc.property(
        rule,
        instant,
        fc.integer({ min: 0, max: 3 * 86_400_000 }),
        (spec, earlierMs, laterBy) => {
          const recurrence = Recurrence.of(spec);
          const fromEarlier = recurrence.next(earlierMs) ?? Infinity;
          const fromLater = recurrence.next(earlierMs + laterBy) ?? Infinity;
          expect(fromLater).toBeGreaterThanOrEqual(fromEarlier);
        },
      ),
      RUNS,
    );
  });

  it('skips nothing: asked from any instant before an occurrence and not before the previous one, it gives that occurrence', () => {
    fc.assert(
      fc.property(rule, instant, fc.double({ min: 0, max: 1, noNaN: true }), (spec, afterMs, f) => {
        const recurrence = Recurrence.of(spec);
        const previous = recurrence.next(afterMs);
        if (previous === undefined) return;
        const next = recurrence.next(previous);
        if (next === undefined) return;
        const between = previous + Math.floor((next - previous - 1) * f);
        expect(recurrence.next(between)).toBe(next);
      }),
      RUNS,
    );
  });

  it('walking from occurrence to occurrence never repeats one or goes back', () => {
    fc.assert(
      fc.property(rule, instant, (spec, fromMs) => {
        const walk = occurrences(Recurrence.of(spec), fromMs, 12);
        expect(new Set(walk).size).toBe(walk.length);
        for (const gap of gaps(walk)) expect(gap).toBeGreaterThanOrEqual(1000);
      }),
      RUNS,
    );
  });
});

describe('Recurrence.of refuses a rule it cannot follow, naming the field', () => {
  it('refuses an interval under 1 second or not a whole number of milliseconds', () => {
    expect(() => Recurrence.of({ everyMs: 999 }, 'schedule "x"')).toThrow(
      new DelayValidationError('schedule "x".every', 'must be at least 1 second; got 999 ms'),
    );
    expect(() => Recurrence.of({ everyMs: 1000.5 })).toThrow(/^schedule\.every /);
    expect(Recurrence.of({ everyMs: 1000 }).describe()).toBe('every 1000 ms');
  });

  it('refuses a zone that is not an IANA zone', () => {
    expect(() => Recurrence.of({ cron: '0 * * * *', timeZone: 'Mars/Olympus' })).toThrow(
      /^schedule\.timeZone must be an IANA time zone.*"Mars\/Olympus"/,
    );
    expect(() => Recurrence.of({ cron: '0 * * * *', timeZone: '' })).toThrow(
      /^schedule\.timeZone /,
    );
  });

  it('refuses an expression that is not cron', () => {
    expect(() => Recurrence.of({ cron: '61 * * * *', timeZone: 'UTC' })).toThrow(
      /^schedule\.cron is not a cron expression .*"61 \* \* \* \*"/,
    );
    expect(Recurrence.of({ cron: '0 8 * * *', timeZone: 'Europe/Berlin' }).describe()).toBe(
      '0 8 * * * (Europe/Berlin)',
    );
  });
});

function gaps(instants: number[]): number[] {
  return instants.slice(1).map((at, i) => at - instants[i]);
}
