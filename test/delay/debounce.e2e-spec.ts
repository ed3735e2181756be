import { DelayValidationError } from 'nest-delay';
import { ManualClock } from 'nest-delay/testing';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import {
  MINUTE,
  SECOND,
  createDelayTestApp,
  useDelayTestApp,
  type DelayTestApp,
} from './delay-test-app.js';

/**
 * `ifExists: 'debounce'` with `maxWait`: every request for a pending key
 * pushes its task back to the request's time, never past maxWait from the
 * first request; one task runs, with the last request's payload.
 */
const rowsOfKey = (t: DelayTestApp, key: string) =>
  t.query<{ id: string; due_at: Date; payload: unknown; executed_at: Date | null }>(
    `SELECT id, due_at, payload, executed_at FROM delayed_task WHERE key = $1 ORDER BY id`,
    [key],
  );

describe('in simulated time, on one instance', () => {
  const app = useDelayTestApp({ concurrency: 1 });

  it('pushes the task back with each request, then holds it at maxWait from the first', async () => {
    const { t } = app;
    const start = t.clock.now();
    const request = (n: number) =>
      t.delay.schedule({
        type: 'test.effect',
        key: 'cart:1:abandoned',
        payload: { n },
        delay: '10m',
        ifExists: 'debounce',
        maxWait: '1h',
      });
    const first = await request(0);
    expect(first.dueAt.getTime()).toBe(start + 10 * MINUTE);
    // A request every 5 minutes for 55 minutes: each pushes it 10 minutes past itself, up to the hour.
    for (let n = 1; n <= 11; n++) {
      await t.tester.advance(5 * MINUTE);
      const task = await request(n);
      expect(task.id).toBe(first.id);
      expect(task.dueAt.getTime()).toBe(Math.min(t.clock.now() + 10 * MINUTE, start + HOUR));
    }
    expect(await t.effects(first.id)).toBe(0);
    await t.tester.advanceTo(start + HOUR - 1);
    expect(await t.effects(first.id)).toBe(0);
    await t.tester.advanceTo(start + HOUR);
    expect(await t.effects(first.id)).toBe(1);
    const rows = await rowsOfKey(t, 'cart:1:abandoned');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ payload: { n: 11 }, executed_at: new Date(start + HOUR) });
  });

  it('a request after the run starts a new task', async () => {
    const { t } = app;
    const request = () =>
      t.delay.schedule({
        type: 'test.effect',
        key: 'cart:2',
        delay: '1m',
        ifExists: 'debounce',
        maxWait: '5m',
      });
    const first = await request();
    await t.tester.advance(MINUTE);
    expect(await t.effects(first.id)).toBe(1);
    const second = await request();
    expect(second.id).not.toBe(first.id);
    expect(second.state).toBe('pending');
    await t.tester.advance(MINUTE);
    expect(await t.effects(second.id)).toBe(1);
  });

  it("in a caller's transaction, as a replace would be", async () => {
    const { t } = app;
    const start = t.clock.now();
    const first = await t.delay.schedule({
      type: 'test.effect',
      key: 'cart:3',
      delay: '10m',
      ifExists: 'debounce',
      maxWait: '15m',
    });
    await t.tester.advance(8 * MINUTE);
    const moved = await t.dataSource.transaction((manager) =>
      t.delay.schedule(
        { type: 'test.effect', key: 'cart:3', delay: '10m', ifExists: 'debounce', maxWait: '15m' },
        { manager },
      ),
    );
    expect(moved.id).toBe(first.id);
    expect(moved.dueAt.getTime()).toBe(start + 15 * MINUTE);
    await t.tester.advanceTo(start + 15 * MINUTE - 1);
    expect(await t.effects(first.id)).toBe(0);
    await t.tester.advanceTo(start + 15 * MINUTE);
    expect(await t.effects(first.id)).toBe(1);
  });

  it.each([
    ['no key', { ifExists: 'debounce', maxWait: '1h' }, 'key'],
    ['no maxWait', { key: 'k', ifExists: 'debounce' }, 'maxWait'],
    ['a bad maxWait', { key: 'k', ifExists: 'debounce', maxWait: 'soon' }, 'maxWait'],
    ['maxWait without debounce', { key: 'k', maxWait: '1h' }, 'maxWait'],
    ['another ifExists', { key: 'k', ifExists: 'later' }, 'ifExists'],
  ])('refuses %s, naming the field', async (_what, fields, field) => {
    const error = await app.t.delay
      .schedule({ type: 'test.effect', delay: '1m', ...(fields as object) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DelayValidationError);
    expect(error).toMatchObject({ field });
  });

  it('is refused by scheduleMany, naming the request', async () => {
    const error = await app.t.delay
      .scheduleMany([
        { type: 'test.effect', delay: '1m' },
        { type: 'test.effect', delay: '1m', key: 'k', ifExists: 'debounce', maxWait: '1h' },
      ])
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ field: 'requests[1].ifExists' });
  });
});

const HOUR = 60 * MINUTE;

describeWithServer('1,000 rapid requests from three instances', () => {
  let db: TestDatabase;
  const clock = new ManualClock();
  let apps: DelayTestApp[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    for (const name of ['a', 'b', 'c']) {
      apps.push(
        await createDelayTestApp(
          db,
          { instanceId: `debounce-${name}`, lease: '10m', window: '30m', concurrency: 3 },
          { clock },
        ),
      );
    }
  });

  afterAll(async () => {
    for (const app of apps) await app.close();
    apps = [];
    await db?.drop();
  });

  /** Moves the shared clock a minute at a time (well within the lease) and runs what is due everywhere. */
  async function advanceTo(at: number) {
    while (clock.now() < at) {
      await apps[0].tester.advanceTo(Math.min(at, clock.now() + MINUTE));
      await Promise.all(apps.slice(1).map((app) => app.tester.runDue()));
    }
  }

  it('keep one task, never due past maxWait from the first request, and run it once', async () => {
    const key = 'cart:many';
    const start = clock.now();
    const maxWaitMs = HOUR;
    let n = 0;
    // 50 rounds of 20 concurrent requests spread over the three instances, a minute apart.
    for (let round = 0; round < 50; round++) {
      await Promise.all(
        Array.from({ length: 20 }, () => {
          const i = n++;
          return apps[i % 3].delay.schedule({
            type: 'test.effect',
            key,
            payload: { n: i },
            delay: '15m',
            ifExists: 'debounce',
            maxWait: maxWaitMs,
          });
        }),
      );
      const rows = await rowsOfKey(apps[0], key);
      expect(rows).toHaveLength(1);
      expect(rows[0].executed_at).toBeNull();
      expect(rows[0].due_at.getTime()).toBe(Math.min(clock.now() + 15 * MINUTE, start + maxWaitMs));
      await advanceTo(clock.now() + MINUTE);
    }
    expect(n).toBe(1000);
    const [task] = await rowsOfKey(apps[0], key);
    expect(task.due_at.getTime()).toBe(start + maxWaitMs);
    await advanceTo(start + maxWaitMs + 5 * SECOND);
    const rows = await rowsOfKey(apps[0], key);
    expect(rows).toHaveLength(1);
    expect(rows[0].executed_at?.getTime()).toBeGreaterThanOrEqual(start + maxWaitMs);
    const [{ runs }] = await apps[0].query<{ runs: number }>(
      `SELECT count(*)::int AS runs FROM effect WHERE task_id = $1`,
      [task.id],
    );
    expect(runs).toBe(1);
  });
});
