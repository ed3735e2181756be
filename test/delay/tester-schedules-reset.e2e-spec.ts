import { Injectable, Module } from '@nestjs/common';
import { DelaySchedules, RecurringTask } from 'nest-delay';
import { DelayTester } from 'nest-delay/testing';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DelayModule } from 'nest-delay';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { createTestDatabase } from '../support/test-database.js';
import {
  MINUTE,
  SECOND,
  SilentLogger,
  useDelayTestApp,
  type DelayTestApp,
} from './delay-test-app.js';

// The test: an app with fast schedules whose test is about one
// one-off task. advance('30m') ran every occurrence in the half hour; after an
// interrupted run the same database held a leftover task that fired again.

@Injectable()
class FastSchedules {
  runs = 0;

  @RecurringTask('tester.every-5s', { every: '5s' })
  every5s() {
    this.runs++;
  }

  @RecurringTask('tester.every-10s', { every: '10s' })
  every10s() {
    this.runs++;
  }
}

@Module({ providers: [FastSchedules] })
class FastSchedulesModule {}

const app = useDelayTestApp(
  { instanceId: 'tester-reset' },
  { modules: [{ module: FastSchedulesModule }] },
);
let t: DelayTestApp;
beforeAll(() => {
  t = app.t;
});

const occurrencesRun = async () =>
  (
    await t.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task WHERE schedule_name IS NOT NULL AND executed_at IS NOT NULL`,
    )
  )[0].n;

describe('DelayTester.advance with { schedules: false }', () => {
  beforeEach(() => t.tester.reset());

  it('runs the one-off tasks due in the span and no occurrence of any schedule', async () => {
    const task = await t.delay.schedule({ type: 'test.effect', delay: '30m' });
    const report = await t.tester.advance('30m', { schedules: false });
    expect(report.byType).toEqual({ 'test.effect': expect.objectContaining({ executed: 1 }) });
    expect(await t.effects(task.id)).toBe(1);
    expect(await occurrencesRun()).toBe(0);
    expect(t.moduleRef.get(FastSchedules).runs).toBe(0);
  });

  it('leaves the schedules running afterwards, and paused ones paused', async () => {
    const schedules = t.moduleRef.get(DelaySchedules);
    await schedules.pause('tester.every-10s');
    await t.tester.advance('1m', { schedules: false });
    const paused = Object.fromEntries((await schedules.list()).map((s) => [s.name, s.paused]));
    expect(paused).toEqual({ 'tester.every-5s': false, 'tester.every-10s': true });
  });

  it('runs every occurrence in the span without the option, as before', async () => {
    const report = await t.tester.advance(MINUTE);
    // every 5 s and every 10 s over a minute: 12 + 6 occurrences.
    expect(report.byType['tester.every-5s']?.executed).toBe(12);
    expect(report.byType['tester.every-10s']?.executed).toBe(6);
  });
});

describe('DelayTester.reset', () => {
  it('deletes what a test left behind: pending and finished tasks, run-time schedules and pauses', async () => {
    const leftover = await t.delay.schedule({ type: 'test.effect', delay: '1h', key: 'left' });
    await t.delay.schedule({ type: 'test.effect', delay: '1s' });
    await t.tester.advance(SECOND, { schedules: false });
    const schedules = t.moduleRef.get(DelaySchedules);
    await schedules.upsert('tester.runtime', { type: 'test.effect', every: '1h' });
    await schedules.pause('tester.every-5s');

    await t.tester.reset();

    const [{ n }] = await t.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task WHERE schedule_name IS NULL`,
    );
    expect(n).toBe(0);
    await t.tester.assertNotScheduled({ key: 'left' });
    expect(t.tester.isHeld(leftover.id)).toBe(false);
    // The app's own schedules are declared again, running; the run-time one is gone.
    const listed = (await schedules.list()).map((s) => [s.name, s.paused]);
    expect(listed.sort()).toEqual([
      ['tester.every-10s', false],
      ['tester.every-5s', false],
    ]);
  });

  it('leaves a working engine: a task scheduled after it runs once, schedules run on', async () => {
    await t.tester.reset();
    const task = await t.delay.schedule({ type: 'test.effect', delay: '10s' });
    const report = await t.tester.advance('10s');
    expect(await t.effects(task.id)).toBe(1);
    expect(report.byType['tester.every-5s']?.executed).toBe(2);
  });
});

describe('DelayTester.reset outside a test clock', () => {
  it('refuses, saying why, when the app does not run on a ManualClock', async () => {
    const db = await createTestDatabase();
    const moduleRef = await Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({
          ...dataSourceOptions({ url: db.url, poolSize: db.poolSize, migrationsRun: true }),
          logging: false,
          retryAttempts: 0,
        }),
        DelayModule.forRoot({ concurrency: db.isServer ? undefined : 1 }),
      ],
    })
      .setLogger(new SilentLogger())
      .compile();
    try {
      await moduleRef.init();
      await expect(DelayTester.for(moduleRef).reset()).rejects.toThrow(
        /reset\(\) deletes every task .* only in an app built with useManualClock/,
      );
    } finally {
      await moduleRef.close();
      await db.drop();
    }
  });
});
