import { Injectable, Module } from '@nestjs/common';
import {
  DelayLimits,
  DelaySchedules,
  DelayedTaskHandler,
  RecurringTask,
  TaskOutcome,
  type TaskContext,
} from 'nest-delay';
import { MINUTE, SECOND, useDelayTestApp, type DelayTestApp } from './delay-test-app.js';

// Issue 44: advance walks its span in due order (a retry within the span runs
// in it, at its own time), and stops with a clear error when a schedule fires
// more often than a test can wait for.

/** Each run: which task, which attempt, and the time the handler was given. */
const runs: Array<{ id: string; attempt: number; at: number }> = [];
const FIXED_5S = { baseDelay: '5s', maxDelay: '5s', jitter: 0 } as const;

@Injectable()
class WalkHandlers {
  every10sRuns = 0;

  /** Fails its first two attempts, completes the third. */
  @DelayedTaskHandler('walk.flaky', { maxAttempts: 5, retry: FIXED_5S })
  flaky(_payload: unknown, { task, attempt }: TaskContext) {
    runs.push({ id: task.id, attempt, at: task.executedAt!.getTime() });
    if (attempt <= 2) throw new Error(`walk.flaky attempt ${attempt} failed`);
  }

  @DelayedTaskHandler('walk.doomed', { maxAttempts: 3, retry: FIXED_5S })
  doomed(_payload: unknown, { task, attempt }: TaskContext) {
    runs.push({ id: task.id, attempt, at: task.executedAt!.getTime() });
    throw new Error(`walk.doomed attempt ${attempt} failed`);
  }

  /** Due again a second after each run, for ever. */
  @DelayedTaskHandler('walk.snoozes')
  snoozes() {
    return TaskOutcome.snooze('1s');
  }

  /** Paused by every test but the runaway one. */
  @RecurringTask('walk.every-10s', { cron: '*/10 * * * * *' })
  every10s() {
    this.every10sRuns++;
  }
}

@Module({ providers: [WalkHandlers] })
class WalkModule {}

const app = useDelayTestApp({ instanceId: 'tester-walk' }, { modules: [{ module: WalkModule }] });
let t: DelayTestApp;
const runsOf = (id: string) =>
  runs.filter((r) => r.id === id).map(({ attempt, at }) => ({ attempt, at }));

beforeEach(async () => {
  t = app.t;
  await t.tester.reset();
  await t.moduleRef.get(DelaySchedules).pause('walk.every-10s');
});

describe('DelayTester.advance walks the span in due order', () => {
  it('runs a task and its retries, each at its own due time, within one advance', async () => {
    const start = t.clock.now();
    const task = await t.delay.schedule({ type: 'walk.flaky', delay: '1s' });
    const report = await t.tester.advance('1m');
    expect(runsOf(task.id)).toEqual([
      { attempt: 1, at: start + SECOND },
      { attempt: 2, at: start + 6 * SECOND },
      { attempt: 3, at: start + 11 * SECOND },
    ]);
    expect(report.byType['walk.flaky']).toMatchObject({ executed: 1, failed: 2 });
    expect(await t.delay.get({ id: task.id })).toMatchObject({
      state: 'executed',
      attempts: 3,
      executedAt: new Date(start + 11 * SECOND),
    });
    expect(t.clock.now()).toBe(start + MINUTE);
  });

  it('reaches the dead letter within one advance when the attempts run out', async () => {
    const start = t.clock.now();
    const task = await t.delay.schedule({ type: 'walk.doomed', delay: '1s' });
    const report = await t.tester.advance('1m', { schedules: false });
    expect(runsOf(task.id).map((r) => r.at - start)).toEqual([1, 6, 11].map((s) => s * SECOND));
    expect(report.byType['walk.doomed']).toMatchObject({ failed: 2, deadLettered: 1 });
    expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'dead', attempts: 3 });
  });

  it('runs tasks in due order, each at its own time, and stops at the end of the span', async () => {
    const start = t.clock.now();
    const late = await t.delay.schedule({ type: 'test.effect', delay: '40s' });
    const early = await t.delay.schedule({ type: 'test.effect', delay: '20s' });
    const after = await t.delay.schedule({ type: 'test.effect', delay: '61s' });
    await t.tester.advanceTo(start + MINUTE);
    const at = await t.query<{ task_id: string; at: Date }>(
      `SELECT task_id::text, at FROM effect WHERE task_id = ANY($1::bigint[]) ORDER BY id`,
      [[late.id, early.id, after.id]],
    );
    expect(at.map((r) => [r.task_id, r.at.getTime() - start])).toEqual([
      [early.id, 20 * SECOND],
      [late.id, 40 * SECOND],
    ]);
    await t.tester.assertScheduled({ key: undefined, runAt: start + 61 * SECOND });
  });
});

describe('DelayTester.advance guards against a runaway span', () => {
  it('throws past maxSteps, naming the schedule that fired most, and leaves the clock where it stopped', async () => {
    await t.moduleRef.get(DelaySchedules).resume('walk.every-10s');
    const start = t.clock.now();
    const before = t.moduleRef.get(WalkHandlers).every10sRuns;
    // Two stops an occurrence: when it is planned, an hour ahead, and when it is due.
    const error = await t.tester.advance('30m', { maxSteps: 20 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(
      /^DelayTester\.advance\("30m"\) stopped after 20 steps \(maxSteps\) at .*What fired most: schedule walk\.every-10s \(\d+ occurrences\); type walk\.every-10s \(10 runs: 10 executed\)\. .*\{ schedules: false \}.*DelaySchedules\.pause\('walk\.every-10s'\).*\{ maxSteps \}/,
    );
    expect(t.moduleRef.get(WalkHandlers).every10sRuns - before).toBe(10);
    expect(t.clock.now()).toBe(start + 100 * SECOND);
  });

  it('stops a 10-second schedule over 3 hours at the default cap; a higher cap runs it on', async () => {
    await t.moduleRef.get(DelaySchedules).resume('walk.every-10s');
    await expect(t.tester.advance('3h')).rejects.toThrow(
      /stopped after 1000 steps \(maxSteps\) .*What fired most: schedule walk\.every-10s/,
    );
    await t.tester.reset();
    const report = await t.tester.advance('10m', { maxSteps: 130 });
    expect(report.byType['walk.every-10s']?.executed).toBe(60);
    // 1,130 stops: about 10 s alone, past Jest's 60 s on a machine loaded by other suites.
  }, 180_000);

  it('names the task type that keeps falling due again when no schedule fired, with what its runs did', async () => {
    await t.delay.schedule({ type: 'walk.snoozes', delay: '1s' });
    const error = await t.tester.advance('1h', { maxSteps: 30 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(
      /What fired most: type walk\.snoozes \(30 runs: 30 snoozed\)\. Each run that makes the task due again within the span \(a snooze, .*\{ maxSteps \}/,
    );
    expect(message).not.toMatch(/What fired most: schedule|schedules: false|DelaySchedules/);
  });

  it('names the type whose tasks fell due and waited when nothing ran', async () => {
    await t.moduleRef.get(DelayLimits).pause('test.effect');
    for (const delay of ['1s', '2s', '3s', '4s', '5s'])
      await t.delay.schedule({ type: 'test.effect', delay });
    await expect(t.tester.advance('1m', { maxSteps: 3 })).rejects.toThrow(
      /stopped after 3 steps .*Nothing ran: tasks fell due and waited, of type test\.effect \(3\), each a step .*DelayLimits\.resume/,
    );
  });

  it('refuses a cap that is not a positive integer, naming it', async () => {
    await expect(t.tester.advance('1m', { maxSteps: 0 })).rejects.toThrow(
      'advance("1m"): maxSteps must be a positive integer; got 0',
    );
  });
});
