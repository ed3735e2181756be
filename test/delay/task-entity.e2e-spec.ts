import { DelayAdmin, DelayValidationError, type TaskContext } from 'nest-delay';
import { MINUTE, useDelayTestApp } from './delay-test-app.js';

/**
 * A task names the business object it belongs to (`entity`): written by
 * schedule and scheduleMany, validated, returned by every read, listed by the
 * admin, seen by its handler, and found through its own index.
 */
const app = useDelayTestApp({ concurrency: 1 });

const entityOf = async (id: string) =>
  (await app.t.query(`SELECT entity FROM delayed_task WHERE id = $1`, [id]))[0].entity;

describe('an entity on a task', () => {
  it('is stored and returned by schedule and get, keyed or not', async () => {
    const unkeyed = await app.t.delay.schedule({
      type: 'test.effect',
      entity: 'order:1',
      delay: '1h',
    });
    expect(unkeyed.entity).toBe('order:1');
    expect(await entityOf(unkeyed.id)).toBe('order:1');
    const keyed = await app.t.delay.schedule({
      type: 'test.effect',
      key: 'order:1:review',
      entity: 'order:1',
      delay: '1h',
    });
    expect(keyed.entity).toBe('order:1');
    expect((await app.t.delay.get({ key: 'order:1:review' }))?.entity).toBe('order:1');
    const none = await app.t.delay.schedule({ type: 'test.effect', delay: '1h' });
    expect(none.entity).toBeNull();
    expect((await app.t.delay.get({ id: none.id }))?.entity).toBeNull();
  });

  it('moves with a replace, and a keep leaves the holder as it was', async () => {
    await app.t.delay.schedule({
      type: 'test.effect',
      key: 'k-replace',
      entity: 'order:2',
      delay: '1h',
    });
    const kept = await app.t.delay.schedule({
      type: 'test.effect',
      key: 'k-replace',
      entity: 'order:3',
      delay: '2h',
    });
    expect(kept.entity).toBe('order:2');
    const replaced = await app.t.delay.schedule({
      type: 'test.effect',
      key: 'k-replace',
      entity: 'order:3',
      delay: '2h',
      ifExists: 'replace',
    });
    expect(replaced.entity).toBe('order:3');
    expect(await entityOf(replaced.id)).toBe('order:3');
  });

  it('is written per row by scheduleMany, shared or not, keyed or not', async () => {
    const unkeyed = await app.t.delay.scheduleMany([
      { type: 'test.effect', entity: 'order:4', delay: '1h' },
      { type: 'test.effect', entity: 'order:5', delay: '1h' },
      { type: 'test.effect', delay: '1h' },
    ]);
    expect(await Promise.all(unkeyed.map((r) => entityOf(r.id)))).toEqual([
      'order:4',
      'order:5',
      null,
    ]);
    const shared = await app.t.delay.scheduleMany([
      { type: 'test.effect', entity: 'order:6', delay: '1h' },
      { type: 'test.effect', entity: 'order:6', delay: '2h' },
    ]);
    expect(await Promise.all(shared.map((r) => entityOf(r.id)))).toEqual(['order:6', 'order:6']);
    const keyed = await app.t.delay.scheduleMany([
      { type: 'test.effect', key: 'many-a', entity: 'order:7', delay: '1h' },
      { type: 'test.effect', entity: 'order:8', delay: '1h' },
    ]);
    expect(await Promise.all(keyed.map((r) => entityOf(r.id)))).toEqual(['order:7', 'order:8']);
  });

  it.each([
    ['an empty string', ''],
    ['a number', 42],
    ['more than 500 characters', 'x'.repeat(501)],
    ['null', null],
  ])('refuses %s, naming the field, and writes nothing', async (_what, entity) => {
    const before = (await app.t.query(`SELECT count(*)::int AS n FROM delayed_task`))[0].n;
    const single = await app.t.delay
      .schedule({ type: 'test.effect', delay: '1h', entity: entity as string })
      .catch((e: unknown) => e);
    expect(single).toBeInstanceOf(DelayValidationError);
    expect(single).toMatchObject({ field: 'entity' });
    expect((single as Error).message).toMatch(/order:42/);
    const many = await app.t.delay
      .scheduleMany([
        { type: 'test.effect', delay: '1h' },
        { type: 'test.effect', delay: '1h', entity: entity as string },
      ])
      .catch((e: unknown) => e);
    expect(many).toMatchObject({ field: 'requests[1].entity' });
    expect((await app.t.query(`SELECT count(*)::int AS n FROM delayed_task`))[0].n).toBe(before);
  });

  it('reaches the handler, and the admin lists by it', async () => {
    let seen: string | null | undefined;
    app.t.behaviour.afterEffect = (_payload, context: TaskContext) => {
      seen = context.task.entity;
    };
    try {
      await app.t.delay.schedule({ type: 'test.effect', entity: 'order:9', delay: '1m' });
      await app.t.tester.advance(MINUTE);
      expect(seen).toBe('order:9');
    } finally {
      app.t.behaviour.afterEffect = undefined;
    }
    const admin = app.t.moduleRef.get(DelayAdmin);
    const page = await admin.list({ entity: 'order:1' });
    expect(page.items.map((task) => task.entity)).toEqual(['order:1', 'order:1']);
    await expect(admin.list({ entity: '' })).rejects.toMatchObject({ field: 'entity' });
  });

  it("reads one entity's tasks through its index, not the table", async () => {
    await app.t.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at, entity)
       SELECT 'test.effect', 'null', now() + interval '1 day', now(), now(), 'bulk:' || g
       FROM generate_series(1, 20000) g`,
    );
    await app.t.query(`ANALYZE delayed_task`);
    const plan = (
      await app.t.query(`EXPLAIN SELECT * FROM delayed_task WHERE entity = 'bulk:77' ORDER BY id`)
    )
      .map((row: { 'QUERY PLAN': string }) => row['QUERY PLAN'])
      .join('\n');
    expect(plan).toContain('delayed_task_entity_idx');
  });
});
