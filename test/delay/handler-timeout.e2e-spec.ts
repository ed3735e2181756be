import { Injectable, Module } from '@nestjs/common';
import type pg from 'pg';
import { DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { useDelayTestApp, recordEffect, SECOND, type DelayTestApp } from './delay-test-app.js';

const TIMEOUT_MS = 300;

@Injectable()
class SlowHandlers {
  started = 0;

  /** Ignores its signal and never returns, holding its claim transaction open. */
  @DelayedTaskHandler('test.hangs', { timeout: TIMEOUT_MS, maxAttempts: 2 })
  hangs(): Promise<never> {
    this.started++;
    return new Promise<never>(() => undefined);
  }

  /** Hangs on its first attempt, throws on the next ones. */
  @DelayedTaskHandler('test.hangs-once', { timeout: TIMEOUT_MS, maxAttempts: 3 })
  hangsOnce(_payload: unknown, context: TaskContext): Promise<never> {
    if (context.attempt === 1) return new Promise<never>(() => undefined);
    return Promise.reject(new Error(`attempt ${context.attempt} fails plainly`));
  }

  /** Writes, then waits for its signal and gives up as asked. */
  @DelayedTaskHandler('test.stops-on-signal', { timeout: TIMEOUT_MS })
  async stopsOnSignal(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    await new Promise((_resolve, reject) =>
      context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true }),
    );
  }
}

@Module({ providers: [SlowHandlers], exports: [SlowHandlers] })
class SlowModule {}

const app = useDelayTestApp(
  { concurrency: 1, retry: { baseDelay: '10s', jitter: 0 } },
  { modules: [{ module: SlowModule }] },
);
let t: DelayTestApp;

beforeAll(async () => {
  t = app.t;
});

beforeEach(() => t.quiesce());

describe('a handler past its timeout', () => {
  it('that ignores its signal is cut off: its attempt fails, its batch-mates run once', async () => {
    const before = await t.delay.scheduleMany(
      Array.from({ length: 10 }, () => ({ type: 'test.effect', delay: 0 })),
    );
    const hung = await t.delay.schedule({ type: 'test.hangs', delay: 0 });
    const after = await t.delay.scheduleMany(
      Array.from({ length: 10 }, () => ({ type: 'test.effect', delay: 0 })),
    );

    const report = await t.tester.runDue();
    expect(report.byType['test.effect']).toMatchObject({ executed: 20, failed: 0 });
    expect(report.byType['test.hangs']).toMatchObject({ executed: 0, failed: 1 });
    for (const result of [...before, ...after]) expect(await t.effects(result.id)).toBe(1);

    const task = await t.delay.get({ id: hung.id });
    expect(task).toMatchObject({ state: 'pending', attempts: 1 });
    expect(task!.lastError).toMatch(
      /timed out after 300 ms and did not stop when its signal aborted/,
    );
    // Retried with the module's backoff, by the app's clock.
    expect(task!.dueAt.getTime()).toBe(t.clock.now() + 10 * SECOND);
    const [row] = await t.query(`SELECT interrupted_at FROM delayed_task WHERE id = $1`, [hung.id]);
    expect(row.interrupted_at).not.toBeNull();
    expect(await t.query(`SELECT * FROM delay_attempt`)).toEqual([]);
  });

  it('is dead-lettered when its last attempt is cut off too', async () => {
    const hung = await t.delay.schedule({ type: 'test.hangs', delay: 0 });
    await t.tester.runDue();
    const report = await t.tester.advance(10 * SECOND);
    expect(report.byType['test.hangs']).toMatchObject({ deadLettered: 1 });
    expect(await t.delay.get({ id: hung.id })).toMatchObject({ state: 'dead', attempts: 2 });
  });

  it('that stops when its signal aborts fails as an ordinary attempt, its writes undone', async () => {
    const task = await t.delay.schedule({ type: 'test.stops-on-signal', delay: 0 });
    const report = await t.tester.runDue();
    expect(report.byType['test.stops-on-signal']).toMatchObject({ failed: 1 });
    expect(await t.effects(task.id)).toBe(0);
    const failed = await t.delay.get({ id: task.id });
    expect(failed).toMatchObject({ state: 'pending', attempts: 1 });
    expect(failed!.lastError).toMatch(/TaskTimeoutError: handler timed out after 300 ms/);
  });

  it('whose charge fails (the database briefly unreachable) is held and claimed again soon', async () => {
    const hung = await t.delay.schedule({ type: 'test.hangs', delay: 0 });
    // The charge's one statement fails once, as if the connection had dropped
    // (on the pool, a retry's or dead-letter's statement is a charge's: fates
    // are written on the claim's own connection).
    const pool = (t.dataSource.driver as unknown as { master: pg.Pool }).master;
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
    let failures = 0;
    (pool as { query: unknown }).query = (...args: unknown[]) => {
      if (failures === 0 && String(args[0]).includes('WITH written AS')) {
        failures++;
        return Promise.reject(new Error('Connection terminated unexpectedly (injected)'));
      }
      return query(...args);
    };
    try {
      await t.tester.runDue();
      expect(failures).toBe(1);
      // Not stranded: still leased here, and in this instance's wheel.
      expect(t.tester.isHeld(hung.id)).toBe(true);
      expect(await t.delay.get({ id: hung.id })).toMatchObject({ state: 'pending', attempts: 0 });

      // Claimed again a second later, cut off again, and charged this time.
      const report = await t.tester.advance(SECOND);
      expect(report.byType['test.hangs']).toMatchObject({ failed: 1 });
      expect(await t.delay.get({ id: hung.id })).toMatchObject({ state: 'pending', attempts: 1 });
      expect(await t.query(`SELECT * FROM delay_attempt`)).toEqual([]);
    } finally {
      delete (pool as { query?: unknown }).query;
    }
  });

  it('keeps its cut-off flag until an attempt of it runs: the claim clears it', async () => {
    const task = await t.delay.schedule({ type: 'test.hangs-once', delay: 0 });
    const flag = async () =>
      (await t.query(`SELECT interrupted_at FROM delayed_task WHERE id = $1`, [task.id]))[0]
        .interrupted_at;
    await t.tester.runDue();
    expect(await flag()).not.toBeNull();
    // Its second attempt runs (alone) and fails plainly: the flag went with that claim.
    const report = await t.tester.advance(10 * SECOND);
    expect(report.byType['test.hangs-once']).toMatchObject({ failed: 1 });
    expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'pending', attempts: 2 });
    expect(await flag()).toBeNull();
  });
});
