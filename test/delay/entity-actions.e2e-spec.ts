import { DelayValidationError } from 'nest-delay';
import { ManualClock } from 'nest-delay/testing';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import {
  HOUR,
  MINUTE,
  SECOND,
  createDelayTestApp,
  useDelayTestApp,
  type DelayTestApp,
} from './delay-test-app.js';

/**
 * cancelEntity and rescheduleEntity: every pending task of one entity at
 * once, in the caller's transaction or not; the wheels follow (a cancelled
 * task never runs, a moved one runs at its new time and not before); a
 * running task is waited for.
 */
const TYPES = ['test.effect', 'test.always-fails', 'test.swallows-db-error'];
let entityN = 0;
/** A fresh entity per test: the tests share one table. */
const newEntity = () => `order:${++entityN}`;

const stateOf = async (t: DelayTestApp, id: string) => (await t.delay.get({ id }))?.state;
const effectsOf = async (t: DelayTestApp, ids: string[]) =>
  (await Promise.all(ids.map((id) => t.effects(id)))).reduce((a, b) => a + b, 0);

/** One pending task of each type for `entity`, due in 1, 2 and 3 minutes; plus one of another entity. */
async function threeTasks(t: DelayTestApp, entity: string) {
  const ids: string[] = [];
  for (const [i, type] of TYPES.entries()) {
    ids.push((await t.delay.schedule({ type, entity, delay: (i + 1) * MINUTE })).id);
  }
  const other = await t.delay.schedule({ type: 'test.effect', entity: 'other', delay: MINUTE });
  return { ids, other: other.id };
}

describe('on one instance', () => {
  const app = useDelayTestApp({ concurrency: 1 });

  it('cancels every pending task of the entity, and only those; none runs', async () => {
    const { t } = app;
    const entity = newEntity();
    const { ids, other } = await threeTasks(t, entity);
    const done = await t.delay.schedule({ type: 'test.effect', entity, delay: 0 });
    await t.tester.runDue();
    expect(await stateOf(t, done.id)).toBe('executed');

    const result = await t.delay.cancelEntity(entity);
    expect(result).toMatchObject({
      entity,
      ids,
      byType: { 'test.effect': 1, 'test.always-fails': 1, 'test.swallows-db-error': 1 },
    });
    expect(result.tasks.map((task) => task.state)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    for (const id of ids) expect(t.tester.isHeld(id)).toBe(false);
    expect(await stateOf(t, other)).toBe('pending');
    expect(await stateOf(t, done.id)).toBe('executed');

    await t.tester.advance(5 * MINUTE);
    expect(await effectsOf(t, ids)).toBe(0);
    expect(await t.effects(other)).toBe(1);
    // Nothing left: an empty result, not an error.
    expect(await t.delay.cancelEntity(entity)).toEqual({ entity, ids: [], byType: {}, tasks: [] });
  });

  it('takes only the types asked for', async () => {
    const { t } = app;
    const entity = newEntity();
    const { ids } = await threeTasks(t, entity);
    const result = await t.delay.cancelEntity(entity, {
      types: ['test.always-fails', 'test.swallows-db-error'],
    });
    expect(result.ids).toEqual(ids.slice(1));
    expect(await stateOf(t, ids[0])).toBe('pending');
    await t.delay.cancelEntity(entity);
  });

  it("in the caller's transaction: rolled back with it, the tasks run; committed, none does", async () => {
    const { t } = app;
    const rolledBack = newEntity();
    const first = await threeTasks(t, rolledBack);
    const error = await t.dataSource
      .transaction(async (manager) => {
        const result = await t.delay.cancelEntity(rolledBack, { manager });
        expect(result.ids).toEqual(first.ids);
        throw new Error('the refund failed');
      })
      .catch((e: unknown) => e);
    expect((error as Error).message).toBe('the refund failed');
    for (const id of first.ids) expect(await stateOf(t, id)).toBe('pending');
    await t.tester.advance(3 * MINUTE);
    expect(await t.effects(first.ids[0])).toBe(1);

    const committed = newEntity();
    const second = await threeTasks(t, committed);
    await t.dataSource.transaction((manager) => t.delay.cancelEntity(committed, { manager }));
    // The wheel still holds them (the transaction might have rolled back): their claim finds them cancelled.
    expect(t.tester.isHeld(second.ids[0])).toBe(true);
    await t.tester.advance(3 * MINUTE);
    expect(await effectsOf(t, second.ids)).toBe(0);
    for (const id of second.ids) expect(await stateOf(t, id)).toBe('cancelled');
  });

  it('moves each task by a delta from its own due time; none runs before its new time', async () => {
    const { t } = app;
    const entity = newEntity();
    const now = t.clock.now();
    const a = await t.delay.schedule({ type: 'test.effect', entity, runAt: now + MINUTE });
    const b = await t.delay.schedule({ type: 'test.effect', entity, runAt: now + 2 * MINUTE });
    const result = await t.delay.rescheduleEntity(entity, { by: '10m' });
    expect(result.ids).toEqual([a.id, b.id]);
    expect(result.byType).toEqual({ 'test.effect': 2 });
    expect(result.tasks.map((task) => task.dueAt.getTime())).toEqual([
      now + 11 * MINUTE,
      now + 12 * MINUTE,
    ]);
    await t.tester.advanceTo(now + 11 * MINUTE - 1);
    expect(await effectsOf(t, [a.id, b.id])).toBe(0);
    await t.tester.advanceTo(now + 11 * MINUTE);
    expect(await t.effects(a.id)).toBe(1);
    expect(await t.effects(b.id)).toBe(0);
    await t.tester.advanceTo(now + 12 * MINUTE);
    expect(await t.effects(b.id)).toBe(1);
  });

  it('moves them all to one time, earlier too, in a transaction that commits', async () => {
    const { t } = app;
    const entity = newEntity();
    const now = t.clock.now();
    const { ids } = await threeTasks(t, entity);
    const to = new Date(now + 30 * SECOND);
    const result = await t.dataSource.transaction((manager) =>
      t.delay.rescheduleEntity(entity, { to }, { manager, types: ['test.effect'] }),
    );
    expect(result.ids).toEqual([ids[0]]);
    expect(result.tasks[0].dueAt).toEqual(to);
    await t.tester.advanceTo(now + 30 * SECOND);
    expect(await t.effects(ids[0])).toBe(1);
    await t.delay.cancelEntity(entity);
  });

  it.each([
    ['no entity', () => app.t.delay.cancelEntity(undefined as never), 'entity'],
    ['an empty entity', () => app.t.delay.cancelEntity(''), 'entity'],
    ['types not an array', () => app.t.delay.cancelEntity('e', { types: 'x' as never }), 'types'],
    ['an empty types', () => app.t.delay.cancelEntity('e', { types: [] }), 'types'],
    ['a bad type', () => app.t.delay.cancelEntity('e', { types: ['a', ''] }), 'types[1]'],
    ['neither by nor to', () => app.t.delay.rescheduleEntity('e', {} as never), 'by'],
    [
      'both by and to',
      () => app.t.delay.rescheduleEntity('e', { by: '1h', to: new Date() } as never),
      'by',
    ],
    ['a negative by', () => app.t.delay.rescheduleEntity('e', { by: -5 }), 'by'],
    ['a bad to', () => app.t.delay.rescheduleEntity('e', { to: 'tomorrow' }), 'to'],
  ])('refuses %s, naming the field', async (_what, call, field) => {
    const error = await call().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DelayValidationError);
    expect(error).toMatchObject({ field });
  });
});

describeWithServer('a running task', () => {
  const app = useDelayTestApp({ concurrency: 2, retry: { baseDelay: '1m', jitter: 0 } });

  /** Blocks the handler of the task with payload `{ block: true }` until released. */
  function blockHandler(t: DelayTestApp) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    let blocked = false;
    t.behaviour.afterEffect = async (payload: { block?: boolean } | null) => {
      if (!payload?.block || blocked) return;
      blocked = true;
      started();
      await released;
    };
    return { running, release };
  }

  /** Resolves once a statement of this database waits for a row lock. */
  async function waitingForLock(t: DelayTestApp) {
    for (;;) {
      const [row] = await t.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      if (row.n > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it.each([
    ['completes: it is not counted', undefined, false],
    ['fails and will retry: it is cancelled and counted', 1, true],
  ])('is waited for; when it %s', async (_what, fail, counted) => {
    const { t } = app;
    const entity = newEntity();
    const running = await t.delay.schedule({
      type: 'test.effect',
      entity,
      payload: fail === undefined ? { block: true } : { block: true, fail },
      delay: MINUTE,
    });
    const later = await t.delay.schedule({ type: 'test.effect', entity, delay: HOUR });
    const handler = blockHandler(t);
    try {
      const ran = t.tester.advance(MINUTE);
      await handler.running;
      const cancelling = t.delay.cancelEntity(entity);
      await waitingForLock(t);
      handler.release();
      const result = await cancelling;
      await ran;
      expect(result.ids).toEqual(counted ? [running.id, later.id] : [later.id]);
      expect(await stateOf(t, running.id)).toBe(counted ? 'cancelled' : 'executed');
      await t.tester.advance(2 * HOUR);
      expect(await t.effects(running.id)).toBe(counted ? 0 : 1);
      expect(await t.effects(later.id)).toBe(0);
    } finally {
      t.behaviour.afterEffect = undefined;
    }
  });
});

describeWithServer('the wheels of other instances follow', () => {
  let db: TestDatabase;
  const clock = new ManualClock();
  let a: DelayTestApp;
  let b: DelayTestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    a = await createDelayTestApp(db, { instanceId: 'a', lease: '3s', window: '1m' }, { clock });
    b = await createDelayTestApp(db, { instanceId: 'b', lease: '3s', window: '1m' }, { clock });
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  /** Moves the shared clock a second at a time (within the lease) and runs what is due on both. */
  async function advance(ms: number) {
    const end = clock.now() + ms;
    while (clock.now() < end) {
      await a.tester.advanceTo(Math.min(end, clock.now() + SECOND));
      await b.tester.runDue();
    }
  }

  it("a task held by b, cancelled by a in a's transaction, never runs", async () => {
    const entity = newEntity();
    const task = await b.delay.schedule({ type: 'test.effect', entity, delay: 30 * SECOND });
    expect(b.tester.isHeld(task.id)).toBe(true);
    const result = await a.dataSource.transaction((manager) =>
      a.delay.cancelEntity(entity, { manager }),
    );
    expect(result.ids).toEqual([task.id]);
    await advance(MINUTE);
    expect(await a.effects(task.id)).toBe(0);
    expect(b.tester.isHeld(task.id)).toBe(false);
  });

  it('a task held by b, moved later by a, runs once at its new time and not before', async () => {
    const entity = newEntity();
    const start = clock.now();
    const task = await b.delay.schedule({ type: 'test.effect', entity, delay: 20 * SECOND });
    expect(b.tester.isHeld(task.id)).toBe(true);
    await a.delay.rescheduleEntity(entity, { by: '5m' });
    await advance(5 * MINUTE + 19 * SECOND);
    expect(await a.effects(task.id)).toBe(0);
    await advance(5 * SECOND);
    expect(await a.effects(task.id)).toBe(1);
    const [row] = await a.query(`SELECT executed_at FROM delayed_task WHERE id = $1`, [task.id]);
    expect(row.executed_at.getTime()).toBeGreaterThanOrEqual(start + 5 * MINUTE + 20 * SECOND);
  });
});
