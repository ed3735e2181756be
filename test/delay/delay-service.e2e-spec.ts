import { DataSource } from 'typeorm';
import {
  DelayValidationError,
  TaskNotFoundError,
  UnknownTaskTypeError,
} from 'nest-delay';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { createDelayTestApp, type DelayTestApp } from './delay-test-app.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

let db: TestDatabase;
let t: DelayTestApp;

const count = async (sql: string, params: unknown[] = []) =>
  Number((await t.query(sql, params))[0].count);
const effects = (taskId: string) =>
  count(`SELECT count(*) FROM effect WHERE task_id = $1`, [taskId]);

beforeAll(async () => {
  db = await createTestDatabase();
  // Concurrency 1: tasks due together are claimed in one batch, one transaction.
  t = await createDelayTestApp(db, {
    concurrency: 1,
    retry: { baseDelay: '10s', maxDelay: '1m', jitter: 0 },
  });
});

afterAll(async () => {
  await t?.close();
  await db?.drop();
});

describe('schedule / get / cancel / reschedule', () => {
  it('stores a pending task with its due time from the clock', async () => {
    const task = await t.delay.schedule({ type: 'test.effect', payload: { a: 1 }, delay: '30m' });
    expect(task).toMatchObject({
      type: 'test.effect',
      payload: { a: 1 },
      state: 'pending',
      attempts: 0,
      key: null,
    });
    expect(task.dueAt.getTime()).toBe(t.clock.now() + 30 * MINUTE);
    expect(await t.delay.get(task.id)).toMatchObject({ id: task.id, state: 'pending' });
    expect(await t.delay.cancel(task.id)).toBe(true);
    expect(await t.delay.cancel(task.id)).toBe(false);
    expect((await t.delay.get(task.id))?.state).toBe('cancelled');
  });

  it('fires a 48 h task after 48 h and not one tick earlier', async () => {
    const task = await t.delay.schedule({ type: 'test.effect', delay: '48h' });
    t.clock.advance(48 * HOUR - SECOND);
    await t.delay.drain();
    expect(await effects(task.id)).toBe(0);
    expect((await t.delay.get(task.id))?.state).toBe('pending');
    t.clock.advance(SECOND);
    await t.delay.drain();
    expect(await effects(task.id)).toBe(1);
    const done = await t.delay.get(task.id);
    expect(done).toMatchObject({ state: 'executed', attempts: 1 });
    expect(done!.executedAt!.getTime()).toBe(task.dueAt.getTime());
  });

  it('dedupes by key: keep returns the pending task, replace moves it', async () => {
    const first = await t.delay.schedule({
      type: 'test.effect',
      key: 'order:1:close',
      delay: '10m',
      payload: { v: 1 },
    });
    const kept = await t.delay.schedule({
      type: 'test.effect',
      key: 'order:1:close',
      delay: '20m',
      payload: { v: 2 },
    });
    expect(kept.id).toBe(first.id);
    expect(kept.payload).toEqual({ v: 1 });
    expect(kept.dueAt).toEqual(first.dueAt);
    const replaced = await t.delay.schedule({
      type: 'test.effect',
      key: 'order:1:close',
      delay: '5m',
      payload: { v: 3 },
      ifExists: 'replace',
    });
    expect(replaced.id).toBe(first.id);
    expect(replaced.payload).toEqual({ v: 3 });
    expect(replaced.dueAt.getTime()).toBe(t.clock.now() + 5 * MINUTE);
    expect(await count(`SELECT count(*) FROM delayed_task WHERE key = 'order:1:close'`)).toBe(1);
    // By key: get, then cancel, then a new one may take the key.
    expect((await t.delay.get('order:1:close'))?.id).toBe(first.id);
    expect(await t.delay.cancel('order:1:close')).toBe(true);
    const again = await t.delay.schedule({
      type: 'test.effect',
      key: 'order:1:close',
      delay: '5m',
    });
    expect(again.id).not.toBe(first.id);
    await t.delay.cancel(again.id);
  });

  it('reschedules earlier and later, and fires at the new time only', async () => {
    const task = await t.delay.schedule({ type: 'test.effect', delay: '2h' });
    await t.delay.reschedule(task.id, { delay: '10m' });
    t.clock.advance(10 * MINUTE);
    await t.delay.drain();
    expect(await effects(task.id)).toBe(1);

    const later = await t.delay.schedule({ type: 'test.effect', delay: '10m' });
    const moved = await t.delay.reschedule(later.id, { delay: '3h' });
    expect(moved.dueAt.getTime()).toBe(t.clock.now() + 3 * HOUR);
    t.clock.advance(2 * HOUR);
    await t.delay.drain();
    expect(await effects(later.id)).toBe(0);
    t.clock.advance(HOUR);
    await t.delay.drain();
    expect(await effects(later.id)).toBe(1);
    await expect(t.delay.reschedule(later.id, { delay: '1m' })).rejects.toBeInstanceOf(
      TaskNotFoundError,
    );
  });

  it('fires a task due in the past on the next turn', async () => {
    const task = await t.delay.schedule({
      type: 'test.effect',
      runAt: new Date(t.clock.now() - HOUR),
    });
    await t.delay.drain();
    expect(await effects(task.id)).toBe(1);
  });
});

describe('validation: a clear error at the call, nothing written', () => {
  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      'unknown type',
      { type: 'nobody.handles', delay: 1 },
      /No handler for delayed task type "nobody.handles"/,
    ],
    ['negative delay', { type: 'test.effect', delay: -1 }, /delay must be/],
    ['NaN delay', { type: 'test.effect', delay: NaN }, /delay must be/],
    ['infinite delay', { type: 'test.effect', delay: Infinity }, /delay must be/],
    ['nonsense duration', { type: 'test.effect', delay: '3 fortnights' }, /delay must be/],
    [
      'invalid date',
      { type: 'test.effect', runAt: new Date('nope') },
      /runAt must be a valid date/,
    ],
    [
      'unparseable date string',
      { type: 'test.effect', runAt: 'tomorrow-ish' },
      /runAt must be a valid date/,
    ],
    [
      'both delay and runAt',
      { type: 'test.effect', delay: 1, runAt: new Date() },
      /only one of them/,
    ],
    ['neither delay nor runAt', { type: 'test.effect' }, /delay or runAt is required/],
    [
      'delay beyond year 9999',
      { type: 'test.effect', delay: 1e16 },
      /delay puts the task after the year 9999/,
    ],
    [
      'huge duration string',
      { type: 'test.effect', delay: '99999999d' },
      /delay puts the task after/,
    ],
    [
      'runAt before 1970',
      { type: 'test.effect', runAt: -8e15 },
      /runAt must be between 1970 and 9999/,
    ],
    [
      'function payload',
      { type: 'test.effect', delay: 1, payload: { f: () => 1 } },
      /payload.f must be JSON/,
    ],
    [
      'NaN in payload',
      { type: 'test.effect', delay: 1, payload: { n: NaN } },
      /payload.n must be JSON/,
    ],
    [
      'class instance payload',
      { type: 'test.effect', delay: 1, payload: new Map() },
      /payload must be JSON/,
    ],
    [
      'bigint payload',
      { type: 'test.effect', delay: 1, payload: [1n] },
      /payload\[0\] must be JSON/,
    ],
    ['empty type', { type: '', delay: 1 }, /type must be a string/],
    ['all-digit key', { type: 'test.effect', delay: 1, key: '123' }, /key must be/],
    [
      'bad ifExists',
      { type: 'test.effect', delay: 1, key: 'k', ifExists: 'overwrite' },
      /ifExists must be/,
    ],
    ['zero maxAttempts', { type: 'test.effect', delay: 1, maxAttempts: 0 }, /maxAttempts must be/],
  ];

  it.each(bad)('%s', async (_name, request, message) => {
    const before = await count(`SELECT count(*) FROM delayed_task`);
    const call = t.delay.schedule(request as never);
    await expect(call).rejects.toThrow(message);
    await expect(call).rejects.toBeInstanceOf(
      _name === 'unknown type' ? UnknownTaskTypeError : DelayValidationError,
    );
    expect(await count(`SELECT count(*) FROM delayed_task`)).toBe(before);
  });

  it('rejects a malformed id or key on cancel/get', async () => {
    await expect(t.delay.cancel('')).rejects.toBeInstanceOf(DelayValidationError);
    await expect(t.delay.get(-5)).rejects.toBeInstanceOf(DelayValidationError);
    expect(await t.delay.get('no-such-key')).toBeUndefined();
  });
});

describe('transactional scheduling', () => {
  it('a rolled-back transaction never fires its task; a committed one does', async () => {
    const dataSource = t.moduleRef.get(DataSource);
    let rolledBackId = '';
    await expect(
      dataSource.transaction(async (manager) => {
        const task = await t.delay.schedule(
          { type: 'test.effect', delay: '1m', key: 'tx:rollback' },
          { manager },
        );
        rolledBackId = task.id;
        throw new Error('caller rolls back');
      }),
    ).rejects.toThrow('caller rolls back');
    const committed = await dataSource.transaction((manager) =>
      t.delay.schedule({ type: 'test.effect', delay: '1m', key: 'tx:commit' }, { manager }),
    );
    t.clock.advance(MINUTE);
    await t.delay.drain();
    expect(await t.delay.get(rolledBackId)).toBeUndefined();
    expect(await effects(rolledBackId)).toBe(0);
    expect(await effects(committed.id)).toBe(1);
  });

  it('a cancel that rolls back leaves the task to fire', async () => {
    const dataSource = t.moduleRef.get(DataSource);
    const task = await t.delay.schedule({ type: 'test.effect', delay: '1m' });
    await expect(
      dataSource.transaction(async (manager) => {
        expect(await t.delay.cancel(task.id, { manager })).toBe(true);
        throw new Error('roll back the cancel');
      }),
    ).rejects.toThrow();
    t.clock.advance(MINUTE);
    await t.delay.drain();
    expect(await effects(task.id)).toBe(1);
  });
});

describe('failures: retried with backoff, then dead-lettered', () => {
  it('retries a failing handler with exponential backoff and rolls back its writes', async () => {
    const task = await t.delay.schedule({
      type: 'test.effect',
      delay: 0,
      payload: { fail: 2 },
      maxAttempts: 5,
    });
    await t.delay.drain();
    // The handler wrote an effect row before throwing: it was rolled back with its savepoint.
    expect(await effects(task.id)).toBe(0);
    let row = await t.delay.get(task.id);
    expect(row).toMatchObject({
      state: 'pending',
      attempts: 1,
      lastError: expect.stringContaining('planned failure 1'),
    });
    expect(row!.dueAt.getTime()).toBe(t.clock.now() + 10 * SECOND);

    t.clock.advance(10 * SECOND - 1);
    await t.delay.drain();
    expect((await t.delay.get(task.id))?.attempts).toBe(1);
    t.clock.advance(1);
    await t.delay.drain();
    row = await t.delay.get(task.id);
    expect(row).toMatchObject({ state: 'pending', attempts: 2 });
    expect(row!.dueAt.getTime()).toBe(t.clock.now() + 20 * SECOND);

    t.clock.advance(20 * SECOND);
    await t.delay.drain();
    expect(await t.delay.get(task.id)).toMatchObject({ state: 'executed', attempts: 3 });
    expect(await effects(task.id)).toBe(1);
  });

  it('dead-letters after maxAttempts, keeps the task and lets a person retry it', async () => {
    const task = await t.delay.schedule({ type: 'test.always-fails', delay: 0, maxAttempts: 3 });
    await t.delay.drain();
    for (let i = 0; i < 3; i++) {
      t.clock.advance(MINUTE);
      await t.delay.drain();
    }
    const dead = await t.delay.get(task.id);
    expect(dead).toMatchObject({
      state: 'dead',
      attempts: 3,
      lastError: 'Error: this handler always fails',
    });
    expect(dead!.deadAt).not.toBeNull();
    const retried = await t.delay.retry(task.id);
    expect(retried).toMatchObject({ state: 'pending', attempts: 0 });
    await t.delay.drain();
    expect(await t.delay.get(task.id)).toMatchObject({ state: 'pending', attempts: 1 });
    // It would fail again: keep it out of the next tests' batches.
    expect(await t.delay.cancel(task.id)).toBe(true);
  });

  it('runs a batch of healthy tasks in one optimistic transaction', async () => {
    const due = t.clock.now() + MINUTE;
    const tasks = await t.delay.scheduleMany(
      Array.from({ length: 20 }, () => ({ type: 'test.effect', runAt: due })),
    );
    const before = t.delay.stats();
    t.clock.advance(MINUTE);
    await t.delay.drain();
    expect(t.delay.stats().batches - before.batches).toBe(1);
    expect(t.delay.stats().reruns - before.reruns).toBe(0);
    expect(t.delay.stats().executed - before.executed).toBe(20);
    const counts = await Promise.all(tasks.map((task) => effects(task.id)));
    expect(counts.every((n) => n === 1)).toBe(true);
  });

  it('in one batch, a failing handler and an unknown type undo only themselves', async () => {
    const due = t.clock.now() + MINUTE;
    await t.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at) VALUES ('vanished.type', 'null', $1, $2, $2)`,
      [new Date(due), new Date(t.clock.now())],
    );
    const tasks = [];
    for (let i = 0; i < 6; i++) {
      tasks.push(
        await t.delay.schedule({
          type: i === 4 ? 'test.swallows-db-error' : 'test.effect',
          runAt: due,
          // Task 2 writes its effect, then throws every time.
          payload: i === 2 ? { fail: 99 } : null,
        }),
      );
    }
    await t.runtime.refresh();
    const before = t.delay.stats();
    t.clock.advance(MINUTE);
    await t.delay.drain();
    // One transaction: the optimistic pass failed, the fenced rerun committed.
    expect(t.delay.stats().batches - before.batches).toBe(1);
    expect(t.delay.stats().reruns - before.reruns).toBe(1);
    const counts = await Promise.all(tasks.map((task) => effects(task.id)));
    // Task 4's handler wrote its effect, then hid a failed statement: undone, and retried.
    expect(counts).toEqual([1, 1, 0, 1, 0, 1]);
    expect(await t.delay.get(tasks[2].id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      lastError: expect.stringContaining('planned failure'),
    });
    expect(await t.delay.get(tasks[4].id)).toMatchObject({
      state: 'pending',
      attempts: 1,
      lastError: expect.stringContaining('left its transaction aborted'),
    });
    const [vanished] = await t.query(
      `SELECT dead_at, last_error FROM delayed_task WHERE type = 'vanished.type'`,
    );
    expect(vanished.dead_at).not.toBeNull();
    await t.delay.cancel(tasks[2].id);
    await t.delay.cancel(tasks[4].id);
  });

  it('dead-letters a due task whose type no handler here knows, with a clear last_error', async () => {
    await t.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at) VALUES ('gone.type', 'null', $1, $1, $1)`,
      [new Date(t.clock.now())],
    );
    const [{ id }] = await t.query(`SELECT id FROM delayed_task WHERE type = 'gone.type'`);
    await t.runtime.refresh();
    await t.delay.drain();
    expect(await t.delay.get(id)).toMatchObject({
      state: 'dead',
      lastError: expect.stringContaining('No handler registered for task type "gone.type"'),
    });
  });
});
