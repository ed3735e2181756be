import { Injectable, Module } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DelayedTaskHandler, DelaySchedules, type TaskContext } from 'nest-delay';
import { useDelayTestApp, MINUTE, SECOND, type DelayTestApp } from './delay-test-app.js';

const RUNS = `
  CREATE TABLE IF NOT EXISTS occurrence_run (
    schedule text NOT NULL,
    scheduled_at timestamptz NOT NULL
  )`;

async function record(manager: EntityManager, context: TaskContext) {
  await manager.query(RUNS);
  await manager.query(`INSERT INTO occurrence_run (schedule, scheduled_at) VALUES ($1, $2)`, [
    context.occurrence!.schedule,
    context.occurrence!.scheduledAt,
  ]);
}

@Injectable()
class RecordingHandlers {
  @DelayedTaskHandler('test.recorded')
  async recorded(_payload: unknown, context: TaskContext) {
    await record(context.manager, context);
  }
}

@Module({ providers: [RecordingHandlers] })
class RecordingModule {}

const runsOf = async (t: DelayTestApp, schedule: string) =>
  (
    await t.query<{ at: Date }>(
      `SELECT scheduled_at AS at FROM occurrence_run WHERE schedule = $1 ORDER BY 1`,
      [schedule],
    )
  ).map((row) => row.at.getTime());

/** Waits (on the database's state, not on time) until `n` sessions wait for a lock. */
async function lockWaiters(t: DelayTestApp, n: number): Promise<void> {
  for (;;) {
    const [row] = await t.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if (row.n >= n) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('run-time changes racing the planner', () => {
  const app = useDelayTestApp({}, { modules: [{ module: RecordingModule }] });

  beforeAll(async () => {
    await app.t.query(RUNS);
  });

  it('a pause that lands while the planner holds the schedule: nothing it planned runs while paused', async () => {
    const { t } = app;
    const schedules = t.moduleRef.get(DelaySchedules);
    const now = t.clock.now();
    // Another session holds an uncommitted task on the schedule's third occurrence:
    // the planner's insert waits on it, inside its transaction, the schedule's row locked.
    const holder = t.dataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    const held = new Date(Math.floor(now / MINUTE) * MINUTE + 2 * MINUTE);
    await holder.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at, schedule_name, occurrence_at)
       VALUES ('test.recorded', 'null', $1, $1, $1, 'test.raced', $1)`,
      [held],
    );
    const upserting = schedules.upsert('test.raced', { type: 'test.recorded', every: '1m' });
    await lockWaiters(t, 1);
    // The pause, forced between the planner's plan and its commit.
    const pausing = schedules.pause('test.raced');
    await lockWaiters(t, 2);
    await holder.rollbackTransaction();
    await holder.release();
    await upserting;
    expect((await pausing).paused).toBe(true);

    await t.tester.advance('1h');
    expect(await runsOf(t, 'test.raced')).toEqual([]);
    await t.tester.assertNotScheduled({ type: 'test.recorded' });
    await schedules.remove('test.raced');
  });

  it('an occurrence planned under an older rule is withdrawn at its claim, not run', async () => {
    const { t } = app;
    const schedules = t.moduleRef.get(DelaySchedules);
    await schedules.upsert('test.changed', { type: 'test.recorded', every: '1m' });
    // The rule changes behind the planner's back (as a change racing a claim would).
    await t.query(
      `UPDATE delay_schedule SET generation = generation + 1 WHERE name = 'test.changed'`,
    );
    await t.tester.advance('3m');
    expect(await runsOf(t, 'test.changed')).toEqual([]);
    const withdrawn = await t.query<{ last_error: string }>(
      `SELECT DISTINCT last_error FROM delayed_task WHERE schedule_name = 'test.changed' AND cancelled_at IS NOT NULL`,
    );
    expect(withdrawn).toEqual([{ last_error: expect.stringMatching(/rule changed/) }]);
    await schedules.remove('test.changed');
  });

  it('a page of schedules that cannot be planned is set aside, and planning ends', async () => {
    const { t } = app;
    const schedules = t.moduleRef.get(DelaySchedules);
    const now = new Date(t.clock.now());
    // More than a planning page (100) of rules corrupted in SQL.
    await t.query(
      `INSERT INTO delay_schedule (name, type, cron, time_zone, catch_up, catch_up_cap, overlap,
                                     in_code, next_at, created_at, updated_at)
         SELECT 'broken.' || i, 'test.recorded', 'not a cron', 'UTC', 'one', 100, 'skip', false, $1, $1, $1
         FROM generate_series(1, 101) i`,
      [now],
    );
    await schedules.upsert('test.healthy', { type: 'test.recorded', every: '1m' });
    await t.tester.runDue();
    const broken = (await schedules.list()).filter((s) => s.name.startsWith('broken.'));
    expect(broken).toHaveLength(101);
    for (const schedule of broken) {
      expect(schedule.planError).toMatch(/cron/);
      expect(schedule.nextAt).toEqual(now);
    }
    const [retry] = await t.query<{ at: Date }>(
      `SELECT DISTINCT plan_retry_at AS at FROM delay_schedule WHERE name LIKE 'broken.%'`,
    );
    expect(retry.at.getTime()).toBe(now.getTime() + MINUTE);
    // The healthy one was planned beside them.
    await t.tester.advance('2m');
    expect((await runsOf(t, 'test.healthy')).length).toBeGreaterThanOrEqual(2);
    await t.query(`DELETE FROM delay_schedule WHERE name LIKE 'broken.%'`);
    await schedules.remove('test.healthy');
  }, 60_000);
});

describe('catch-up after an outage, at the claim', () => {
  const app = useDelayTestApp({}, { modules: [{ module: RecordingModule }] });

  it("a per-second schedule down 5 minutes: 'skip' runs none of the overdue, 'one' one, 'all' up to its cap", async () => {
    const { t } = app;
    await t.query(RUNS);
    const schedules = t.moduleRef.get(DelaySchedules);
    const policies = {
      'test.skip': { catchUp: 'skip' },
      'test.one': { catchUp: 'one' },
      'test.all': { catchUp: 'all', catchUpCap: 10 },
    } as const;
    for (const [name, policy] of Object.entries(policies))
      await schedules.upsert(name, { type: 'test.recorded', every: '1s', ...policy });

    // On time: every occurrence runs, none missed.
    const start = t.clock.now();
    await t.tester.advance('10s');
    for (const name of Object.keys(policies)) {
      const runs = await runsOf(t, name);
      expect(runs).toEqual(Array.from({ length: 11 }, (_, i) => start + i * SECOND));
      expect((await schedules.get(name)).missed).toBe(0);
    }

    // Five minutes with no instance running: the clock moves, nothing runs meanwhile.
    const downFrom = t.clock.now();
    t.clock.set(downFrom + 5 * MINUTE);
    await t.tester.runDue();
    const back = t.clock.now();
    // Overdue: due more than two leases (2 × 30 s) before the claim.
    const overdueBefore = back - 60 * SECOND;
    const overdue = (downFrom + 5 * MINUTE - 60 * SECOND - downFrom) / SECOND - 1;
    const kept = { 'test.skip': 0, 'test.one': 1, 'test.all': 10 };
    for (const name of Object.keys(policies) as Array<keyof typeof policies>) {
      const runs = (await runsOf(t, name)).filter((at) => at > downFrom);
      const late = runs.filter((at) => at < overdueBefore);
      // The latest overdue ones, as many as the policy keeps.
      expect(late).toEqual(
        Array.from({ length: kept[name] }, (_, i) => overdueBefore - (kept[name] - i) * SECOND),
      );
      // Due within two leases: late, not overdue, each runs.
      expect(runs.filter((at) => at >= overdueBefore)).toHaveLength(61);
      expect((await schedules.get(name)).missed).toBe(overdue - kept[name]);
    }
    const reasons = await t.query<{ last_error: string }>(
      `SELECT DISTINCT last_error FROM delayed_task WHERE cancelled_at IS NOT NULL ORDER BY 1`,
    );
    expect(reasons.map((r) => r.last_error)).toEqual([
      expect.stringMatching(/^missed: .*\(all\)$/),
      expect.stringMatching(/^missed: .*\(one\)$/),
      expect.stringMatching(/^missed: .*\(skip\)$/),
    ]);

    // On time again afterwards.
    const resumed = t.clock.now();
    await t.tester.advance('5s');
    for (const name of Object.keys(policies)) {
      const runs = (await runsOf(t, name)).filter((at) => at > resumed);
      expect(runs).toEqual(Array.from({ length: 5 }, (_, i) => resumed + (i + 1) * SECOND));
    }
  });
});
