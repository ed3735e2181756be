import { Injectable, Module } from '@nestjs/common';
import { DelayedTaskHandler, TaskOutcome, type TaskContext } from 'nest-delay';
import { HOUR, useDelayTestApp, recordEffect, type DelayTestApp } from './delay-test-app.js';

@Injectable()
class TesterHandlers {
  @DelayedTaskHandler('tester.discard')
  discard() {
    return TaskOutcome.discard('not today');
  }

  @DelayedTaskHandler('tester.snooze')
  snooze() {
    return TaskOutcome.snooze('15m');
  }

  /** Writes its effect, then throws. */
  @DelayedTaskHandler('tester.throws')
  async throws(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    throw new Error('tester.throws failed');
  }

  /** Records what perform gave it. */
  @DelayedTaskHandler('tester.echo')
  async echo(payload: unknown, context: TaskContext) {
    await context.manager.query(
      `INSERT INTO tester_echo (payload, attempt, instance) VALUES ($1, $2, $3)`,
      [JSON.stringify(payload), context.attempt, context.instanceId],
    );
  }
}

@Module({ providers: [TesterHandlers] })
class TesterModule {}

const app = useDelayTestApp({ instanceId: 'tester' }, { modules: [{ module: TesterModule }] });
let t: DelayTestApp;

beforeAll(async () => {
  t = app.t;
  await t.query(
    `CREATE TABLE tester_echo (id serial PRIMARY KEY, payload jsonb, attempt int, instance text)`,
  );
});

describe('DelayTester.assertScheduled / assertNotScheduled', () => {
  it('finds the one pending task matching type, key, a payload subset and the exact due time', async () => {
    const task = await t.delay.schedule({
      type: 'test.effect',
      key: 'tester:order:1',
      payload: { orderId: 'o-1', amount: 5, nested: { a: 1, b: 2 } },
      delay: '48h',
    });
    const runAt = t.clock.now() + 48 * HOUR;
    const found = await t.tester.assertScheduled({
      type: 'test.effect',
      key: 'tester:order:1',
      payload: { orderId: 'o-1', nested: { a: 1 } },
      runAt,
    });
    expect(found).toMatchObject({ id: task.id, state: 'pending', key: 'tester:order:1' });
    expect(
      (await t.tester.assertScheduled({ runAt: new Date(runAt), key: 'tester:order:1' })).id,
    ).toBe(task.id);
    await t.tester.assertNotScheduled({ key: 'tester:order:1', payload: { orderId: 'o-2' } });
    await t.tester.assertNotScheduled({ key: 'tester:order:1', runAt: runAt + 1 });
    await t.delay.cancel({ id: task.id });
  });

  it('fails when none matches, listing what is pending of that type', async () => {
    const task = await t.delay.schedule({
      type: 'test.effect',
      key: 'tester:order:2',
      payload: { orderId: 'o-2' },
      delay: '48h',
    });
    const dueAt = new Date(t.clock.now() + 48 * HOUR);
    const call = t.tester.assertScheduled({
      type: 'test.effect',
      key: 'tester:order:2',
      runAt: t.clock.now() + 47 * HOUR,
    });
    await expect(call).rejects.toThrow(
      /^Expected one pending delayed task matching \{.*"key":"tester:order:2".*\}, found 0\. Pending of type test\.effect: /,
    );
    await expect(call).rejects.toThrow(
      `#${task.id} test.effect key=tester:order:2 at ${dueAt.toISOString()} payload={"orderId":"o-2"}`,
    );
    // The wrong runAt is shown as a time, not a number.
    await expect(call).rejects.toThrow(new Date(t.clock.now() + 47 * HOUR).toISOString());
    await t.delay.cancel({ id: task.id });
    // Once cancelled it is no longer pending: neither found nor listed.
    await expect(t.tester.assertScheduled({ key: 'tester:order:2' })).rejects.toThrow(/found 0/);
    await t.tester.assertNotScheduled({ key: 'tester:order:2' });
  });

  it('fails when several match, listing them', async () => {
    const a = await t.delay.schedule({ type: 'test.effect', payload: { batch: 'x' }, delay: '1h' });
    const b = await t.delay.schedule({ type: 'test.effect', payload: { batch: 'x' }, delay: '2h' });
    const call = t.tester.assertScheduled({ type: 'test.effect', payload: { batch: 'x' } });
    await expect(call).rejects.toThrow(/found 2\. Pending matches: /);
    await expect(call).rejects.toThrow(new RegExp(`#${a.id} .*; #${b.id} `));
    const scheduled = await t.tester.scheduled({ payload: { batch: 'x' } });
    expect(scheduled.map((task) => task.id)).toEqual([a.id, b.id]);
    const notCall = t.tester.assertNotScheduled({ payload: { batch: 'x' } });
    await expect(notCall).rejects.toThrow(
      /^Expected no pending delayed task matching \{"payload":\{"batch":"x"\}\}, found 2: /,
    );
    await expect(notCall).rejects.toThrow(`#${a.id} test.effect key=- at`);
    await t.delay.cancel({ id: a.id });
    await t.delay.cancel({ id: b.id });
    await t.tester.assertNotScheduled({ payload: { batch: 'x' } });
  });
});

describe('DelayTester.perform', () => {
  it('runs the handler on a payload in a transaction that commits, without a task row', async () => {
    const rows = async () => Number((await t.query(`SELECT count(*) FROM delayed_task`))[0].count);
    const before = await rows();
    expect(await t.tester.perform('tester.echo', { hello: 'world' })).toEqual({
      outcome: 'executed',
    });
    expect(await t.query(`SELECT payload, attempt, instance FROM tester_echo`)).toEqual([
      { payload: { hello: 'world' }, attempt: 1, instance: 'tester' },
    ]);
    expect(await rows()).toBe(before);
  });

  it('reports a TaskOutcome', async () => {
    expect(await t.tester.perform('tester.discard')).toEqual({
      outcome: 'discarded',
      reason: 'not today',
    });
    expect(await t.tester.perform('tester.snooze', { any: 1 })).toEqual({
      outcome: 'snoozed',
      snoozeMs: 15 * 60_000,
    });
  });

  it('rolls back and rethrows when the handler throws; refuses an unknown type', async () => {
    await expect(t.tester.perform('tester.throws', null)).rejects.toThrow('tester.throws failed');
    expect(await t.effects('0')).toBe(0);
    await expect(t.tester.perform('nobody.handles')).rejects.toThrow(
      /No handler for delayed task type "nobody.handles" \(known: .*tester\.echo.*\)/,
    );
  });
});

describe('DelayTester.advance / advanceTo / runDue', () => {
  it('moves the ManualClock by a duration string and reports what ran, by type', async () => {
    await t.quiesce();
    const start = t.clock.now();
    const task = await t.delay.schedule({ type: 'test.effect', delay: '48h' });
    const snoozer = await t.delay.schedule({ type: 'tester.snooze', delay: '48h' });
    expect(await t.tester.advance('47h')).toEqual({
      executed: 0,
      failed: 0,
      deadLettered: 0,
      snoozed: 0,
      skipped: 0,
      byType: {},
    });
    const report = await t.tester.advanceTo(new Date(start + 48 * HOUR));
    expect(t.clock.now()).toBe(start + 48 * HOUR);
    expect(report).toEqual({
      executed: 1,
      failed: 0,
      deadLettered: 0,
      snoozed: 1,
      skipped: 0,
      byType: {
        'test.effect': { executed: 1, failed: 0, deadLettered: 0, snoozed: 0, skipped: 0 },
        'tester.snooze': { executed: 0, failed: 0, deadLettered: 0, snoozed: 1, skipped: 0 },
      },
    });
    expect(await t.effects(task.id)).toBe(1);
    await t.delay.cancel({ id: snoozer.id });
    // Nothing due: an empty report, and time does not move.
    expect((await t.tester.runDue()).executed).toBe(0);
    expect(t.clock.now()).toBe(start + 48 * HOUR);
  });
});
