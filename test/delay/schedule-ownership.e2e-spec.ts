import { Injectable, Module } from '@nestjs/common';
import { RecurringTask } from 'nest-delay';
import { ManualClock } from 'nest-delay/testing';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { CapturingLogger, createDelayTestApp, type DelayTestApp } from './delay-test-app.js';

// Two versions of an app (or two services): each declares schedules the
// other does not know, with handlers of its own, and both share one.
@Injectable()
class VersionOneHandlers {
  @RecurringTask('shared.every-minute', { every: '1m' })
  shared() {}

  @RecurringTask('v1.only', { every: '5m' })
  onlyOne() {}
}

@Module({ providers: [VersionOneHandlers] })
class VersionOne {}

@Injectable()
class VersionTwoHandlers {
  @RecurringTask('shared.every-minute', { every: '1m' })
  shared() {}

  @RecurringTask('v2.only', { every: '10m' })
  onlyTwo() {}
}

@Module({ providers: [VersionTwoHandlers] })
class VersionTwo {}

/** Declares the shared name with another rule. */
@Injectable()
class OtherRuleHandlers {
  @RecurringTask('shared.every-minute', { every: '5m' })
  shared() {}
}

@Module({ providers: [OtherRuleHandlers] })
class OtherRule {}

const names = async (t: DelayTestApp) =>
  (await t.query<{ name: string }>(`SELECT name FROM delay_schedule ORDER BY name`)).map(
    (row) => row.name,
  );

describeWithServer('schedules declared in code by two versions on one database', () => {
  let db: TestDatabase;
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  const boot = (instanceId: string, module: typeof VersionOne) =>
    createDelayTestApp(db, { instanceId }, { clock, modules: [{ module }] });
  let one: DelayTestApp | undefined;
  let two: DelayTestApp | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
  });

  afterAll(async () => {
    await one?.close();
    await two?.close();
    await db?.drop();
  });

  it('restarting in turn (a rolling deploy), neither removes the schedules of the other', async () => {
    one = await boot('v1-a', VersionOne);
    two = await boot('v2-a', VersionTwo);
    const all = ['shared.every-minute', 'v1.only', 'v2.only'];
    expect(await names(two)).toEqual(all);

    // The old version restarts while the new one runs: it does not know v2.only.
    await one.close();
    one = await boot('v1-b', VersionOne);
    expect(await names(one)).toEqual(all);
    await Promise.all([one.tester.runDue(), two.tester.runDue()]);
    expect(await names(one)).toEqual(all);

    // The new version restarts while the old one runs: it does not know v1.only.
    await two.close();
    two = await boot('v2-b', VersionTwo);
    await Promise.all([one.tester.runDue(), two.tester.runDue()]);
    expect(await names(two)).toEqual(all);

    // Each schedule still runs: the minute one once a minute, by whichever instance.
    // In steps of a heartbeat (10 s), so that both keep their leases: a step longer
    // than a lease would let one take the other over, as if it had died.
    for (let step = 0; step < 30; step++) {
      clock.advance(10_000);
      await Promise.all([one.tester.runDue(), two.tester.runDue()]);
    }
    const [ran] = await two.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task
       WHERE schedule_name = 'shared.every-minute' AND executed_at IS NOT NULL`,
    );
    expect(ran.n).toBeGreaterThanOrEqual(5);
  });

  it('removes a schedule once no live instance declares it (the old version gone)', async () => {
    await one!.close();
    one = undefined;
    // The next planning round of a live instance: v1.only has no declaring instance left.
    await two!.tester.runDue();
    expect(await names(two!)).toEqual(['shared.every-minute', 'v2.only']);
    const [pending] = await two!.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task
       WHERE schedule_name = 'v1.only' AND executed_at IS NULL AND cancelled_at IS NULL`,
    );
    expect(pending.n).toBe(0);
  });

  it('two live instances declaring one name with different rules: the newest boot wins, with a warning', async () => {
    const logger = new CapturingLogger();
    const other = await createDelayTestApp(
      db,
      { instanceId: 'other-rule' },
      { clock, modules: [{ module: OtherRule }], logger },
    );
    try {
      const [row] = await other.query<{ every_ms: string }>(
        `SELECT every_ms FROM delay_schedule WHERE name = 'shared.every-minute'`,
      );
      expect(Number(row.every_ms)).toBe(300_000);
      expect(logger.messages('warn')).toContainEqual(
        expect.stringMatching(
          /shared\.every-minute is declared with another rule by live instance v2-b/,
        ),
      );
      // The older instance's next round changes nothing back: the rule stays the newest boot's.
      await two!.tester.runDue();
      const [after] = await two!.query<{ every_ms: string }>(
        `SELECT every_ms FROM delay_schedule WHERE name = 'shared.every-minute'`,
      );
      expect(Number(after.every_ms)).toBe(300_000);
    } finally {
      await other.close();
    }
  });
});
