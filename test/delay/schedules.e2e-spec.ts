import { Injectable, Module } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import {
  DelayedTaskHandler,
  DelaySchedules,
  RecurringTask,
  ScheduleNotFoundError,
  type TaskContext,
} from 'nest-delay';
import { ManualClock } from 'nest-delay/testing';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { createDelayTestApp, useDelayTestApp, type DelayTestApp } from './delay-test-app.js';

const OCCURRENCES = `
  CREATE TABLE IF NOT EXISTS occurrence (
    id bigserial PRIMARY KEY,
    schedule text NOT NULL,
    scheduled_at timestamptz NOT NULL,
    previous_at timestamptz NULL,
    instance text NOT NULL
  )`;

async function record(manager: EntityManager, context: TaskContext) {
  await manager.query(OCCURRENCES);
  const { occurrence } = context;
  await manager.query(
    `INSERT INTO occurrence (schedule, scheduled_at, previous_at, instance) VALUES ($1, $2, $3, $4)`,
    [occurrence!.schedule, occurrence!.scheduledAt, occurrence!.previousAt, context.instanceId],
  );
}

@Injectable()
class BerlinHandlers {
  /** 02:30 every day in Berlin: a time that does not exist once a year, and exists twice once. */
  @RecurringTask('test.berlin-0230', { cron: '30 2 * * *', timeZone: 'Europe/Berlin' })
  async berlin(_payload: unknown, context: TaskContext) {
    await record(context.manager, context);
  }
}

@Module({ providers: [BerlinHandlers] })
class BerlinModule {}

@Injectable()
class MinuteHandlers {
  @RecurringTask('test.every-minute', { every: '1m', catchUp: 'all', overlap: 'allow' })
  async everyMinute(_payload: unknown, context: TaskContext) {
    await record(context.manager, context);
  }
}

@Module({ providers: [MinuteHandlers] })
class MinuteModule {}

@Injectable()
class RuntimeHandlers {
  /** The handler of schedules added at run time. */
  @DelayedTaskHandler('test.recorded')
  async recorded(_payload: unknown, context: TaskContext) {
    await record(context.manager, context);
  }

  /** Fails its first attempt (retried 10 minutes later), to overlap the next occurrence. */
  @DelayedTaskHandler('test.fails-first', { retry: { baseDelay: '10m', jitter: 0 } })
  async failsFirst(_payload: unknown, context: TaskContext) {
    if (context.attempt === 1) throw new Error('first attempt fails');
    await record(context.manager, context);
  }
}

@Module({ providers: [RuntimeHandlers] })
class RuntimeModule {}

const occurrences = async (t: DelayTestApp, schedule: string) =>
  (
    await t.query<{ scheduled_at: Date; previous_at: Date | null; n: number }>(
      `SELECT scheduled_at, previous_at, count(*)::int AS n FROM occurrence
       WHERE schedule = $1 GROUP BY 1, 2 ORDER BY 1`,
      [schedule],
    )
  ).map((row) => ({
    at: row.scheduled_at.toISOString(),
    previous: row.previous_at?.toISOString() ?? null,
    n: row.n,
  }));

describe('a daily 02:30 schedule in Europe/Berlin across both DST changes', () => {
  const spring = useDelayTestApp(
    {},
    { clock: new ManualClock(Date.UTC(2026, 2, 27, 12)), modules: [{ module: BerlinModule }] },
  );

  it('runs once on the spring-forward day, at 03:00 (02:30 does not exist), each occurrence once', async () => {
    const { t } = spring;
    await t.query(OCCURRENCES);
    await t.tester.advanceTo(Date.UTC(2026, 2, 31, 12));
    expect(await occurrences(t, 'test.berlin-0230')).toEqual([
      { at: '2026-03-28T01:30:00.000Z', previous: null, n: 1 },
      // 2026-03-29: clocks go from 02:00 to 03:00; its 02:30 runs once, at the first valid time.
      { at: '2026-03-29T01:00:00.000Z', previous: '2026-03-28T01:30:00.000Z', n: 1 },
      { at: '2026-03-30T00:30:00.000Z', previous: '2026-03-29T01:00:00.000Z', n: 1 },
      { at: '2026-03-31T00:30:00.000Z', previous: '2026-03-30T00:30:00.000Z', n: 1 },
    ]);
  });
});

describe('a daily 02:30 schedule in Europe/Berlin on the fall-back day', () => {
  const fall = useDelayTestApp(
    {},
    { clock: new ManualClock(Date.UTC(2026, 9, 23, 12)), modules: [{ module: BerlinModule }] },
  );

  it('runs once, at the first 02:30 (summer time), never twice', async () => {
    const { t } = fall;
    await t.query(OCCURRENCES);
    await t.tester.advanceTo(Date.UTC(2026, 9, 27, 12));
    expect(await occurrences(t, 'test.berlin-0230')).toEqual([
      { at: '2026-10-24T00:30:00.000Z', previous: null, n: 1 },
      // 2026-10-25: clocks go from 03:00 back to 02:00; 02:30 happens twice, runs once.
      { at: '2026-10-25T00:30:00.000Z', previous: '2026-10-24T00:30:00.000Z', n: 1 },
      { at: '2026-10-26T01:30:00.000Z', previous: '2026-10-25T00:30:00.000Z', n: 1 },
      { at: '2026-10-27T01:30:00.000Z', previous: '2026-10-26T01:30:00.000Z', n: 1 },
    ]);
  });
});

describe('schedules at run time', () => {
  const app = useDelayTestApp({}, { modules: [{ module: RuntimeModule }] });

  it('adds, lists, pauses with catch-up on resume, changes and removes a schedule', async () => {
    const { t } = app;
    await t.query(OCCURRENCES);
    const schedules = t.moduleRef.get(DelaySchedules);
    const start = t.clock.now();
    const added = await schedules.upsert('test.runtime', {
      type: 'test.recorded',
      every: '10m',
      catchUp: 'one',
    });
    expect(added).toMatchObject({
      name: 'test.runtime',
      everyMs: 600_000,
      paused: false,
      inCode: false,
    });
    await t.tester.advance('30m');
    // 00:00 (its first, at once), 00:10, 00:20 and 00:30.
    expect((await occurrences(t, 'test.runtime')).map((o) => o.n)).toEqual([1, 1, 1, 1]);

    // Paused for an hour, resumed at 01:32: 00:40 to 01:30 were missed (overdue: by more
    // than two leases); 'one' runs the latest of them, 01:30, and counts the five before it.
    await schedules.pause('test.runtime');
    await t.tester.advance('62m');
    const resumed = await schedules.resume('test.runtime');
    expect(resumed.paused).toBe(false);
    await t.tester.runDue();
    const after = await occurrences(t, 'test.runtime');
    expect(after).toHaveLength(5);
    expect(after[4]).toEqual({
      at: new Date(start + 90 * 60_000).toISOString(),
      previous: new Date(start + 80 * 60_000).toISOString(),
      n: 1,
    });
    expect((await schedules.get('test.runtime')).missed).toBe(5);

    // Removed: nothing more runs, and the name is gone.
    await schedules.remove('test.runtime');
    await t.tester.advance('1h');
    expect(await occurrences(t, 'test.runtime')).toHaveLength(5);
    await expect(schedules.get('test.runtime')).rejects.toBeInstanceOf(ScheduleNotFoundError);
    await expect(
      schedules.upsert('test.bad', { type: 'test.recorded', cron: '61 * * * *' }),
    ).rejects.toThrow(/cron/);
    await expect(schedules.upsert('test.nobody', { every: '1m' })).rejects.toThrow(/test\.nobody/);
  });

  it("with overlap 'skip', cancels an occurrence that comes due while the one before is retrying", async () => {
    const { t } = app;
    const schedules = t.moduleRef.get(DelaySchedules);
    await schedules.upsert('test.overlapping', { type: 'test.fails-first', every: '5m' });
    // The first occurrence fails and retries 10 minutes later: the second comes due meanwhile.
    const report = await t.tester.advance('11m');
    expect(report.byType['test.fails-first']).toMatchObject({ failed: 1, skipped: 1 });
    const skipped = await t.query<{ last_error: string }>(
      `SELECT last_error FROM delayed_task WHERE schedule_name = 'test.overlapping' AND cancelled_at IS NOT NULL`,
    );
    expect(skipped).toEqual([
      { last_error: expect.stringMatching(/earlier occurrence of its schedule is still retrying/) },
    ]);
    await schedules.remove('test.overlapping');
  });
});

describeWithServer('one schedule on two instances', () => {
  let db: TestDatabase;
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  let one: DelayTestApp;
  let two: DelayTestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    const setup = { clock, modules: [{ module: MinuteModule }] };
    one = await createDelayTestApp(db, { instanceId: 'one' }, setup);
    two = await createDelayTestApp(db, { instanceId: 'two' }, setup);
  });

  afterAll(async () => {
    await one?.close();
    await two?.close();
    await db?.drop();
  });

  it('plans and runs each occurrence once, whichever instance gets to it', async () => {
    await one.query(OCCURRENCES);
    for (let minute = 0; minute < 30; minute++) {
      clock.advance(60_000);
      await Promise.all([one.tester.runDue(), two.tester.runDue()]);
    }
    const rows = await occurrences(one, 'test.every-minute');
    expect(rows.length).toBeGreaterThanOrEqual(29);
    expect(rows.filter((row) => row.n !== 1)).toEqual([]);
    // Consecutive: none lost between them.
    for (let i = 1; i < rows.length; i++)
      expect(Date.parse(rows[i].at) - Date.parse(rows[i - 1].at)).toBe(60_000);
  });
});
