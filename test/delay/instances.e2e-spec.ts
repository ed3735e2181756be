import { ManualClock } from 'nest-delay';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { createDelayTestApp, type DelayTestApp } from './delay-test-app.js';

// Three app instances (separate Nest contexts, separate pools) on one server
// database, sharing one ManualClock so time moves for all of them at once.
describeWithServer('several instances on one database', () => {
  let db: TestDatabase;
  let clock: ManualClock;
  let apps: DelayTestApp[];

  beforeAll(async () => {
    db = await createTestDatabase();
    clock = new ManualClock();
    apps = [];
    for (const name of ['a', 'b', 'c']) {
      apps.push(
        await createDelayTestApp(
          db,
          { instanceId: `instance-${name}`, lease: '3s', concurrency: 3 },
          clock,
        ),
      );
    }
  });

  afterAll(async () => {
    for (const app of apps ?? []) await app.close();
    await db?.drop();
  });

  const drainAll = () => Promise.all(apps.map((a) => a.delay.drain()));
  const query = <T = any>(sql: string, params?: unknown[]) => apps[0].query<T>(sql, params);

  it('runs 5,000 tasks due within a few seconds exactly once, spread over the instances', async () => {
    const start = clock.now();
    // Half through the instances' APIs (round robin, as a load balancer would)...
    const viaApi = Array.from({ length: 2500 }, (_, i) => ({
      type: 'test.effect',
      runAt: start + 1000 + (i % 3000),
    }));
    for (let i = 0; i < 3; i++)
      await apps[i].delay.scheduleMany(viaApi.filter((_, j) => j % 3 === i));
    // ...and half written by another producer straight into the table, unleased:
    // the three loaders race for them with SKIP LOCKED.
    await query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       SELECT 'test.effect', 'null', $1::timestamptz + (g % 3000) * interval '1 millisecond', $1, $1
       FROM generate_series(1, 2500) g`,
      [new Date(start + 500)],
    );
    await Promise.all(apps.map((a) => a.runtime.refresh()));
    // Some tasks held by every instance at once: the claim must still run them once.
    const shared = await query<{ id: string; due_at: Date }>(
      `SELECT id, due_at FROM delayed_task ORDER BY id LIMIT 300`,
    );
    for (const app of apps)
      for (const row of shared) app.runtime.hold(Number(row.id), row.due_at.getTime());

    clock.advance(4000);
    await drainAll();

    const [{ tasks, executed }] = await query(
      `SELECT count(*)::int AS tasks, count(executed_at)::int AS executed FROM delayed_task`,
    );
    expect(tasks).toBe(5000);
    expect(executed).toBe(5000);
    const perTask = await query(
      `SELECT task_id, count(*)::int AS n FROM effect GROUP BY task_id HAVING count(*) <> 1`,
    );
    expect(perTask).toEqual([]);
    expect(Number((await query(`SELECT count(*) FROM effect`))[0].count)).toBe(5000);
    const perInstance = await query<{ instance: string; n: number }>(
      `SELECT instance, count(*)::int AS n FROM effect GROUP BY instance ORDER BY instance`,
    );
    expect(perInstance.length).toBeGreaterThan(1);
    expect(perInstance.reduce((sum, r) => sum + r.n, 0)).toBe(5000);
  });

  it('two instances booting on a backlog claim it from the table together, each task once', async () => {
    const before = Number((await query(`SELECT count(*) FROM effect`))[0].count);
    const [{ first }] = await query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       SELECT 'test.effect', 'null', $1::timestamptz - g * interval '10 milliseconds', $1, $1
       FROM generate_series(1, 3000) g
       RETURNING (SELECT coalesce(max(id), 0) + 1 FROM delayed_task) AS first`,
      [new Date(clock.now() - 60_000)],
    );
    const booted = await Promise.all(
      ['d', 'e'].map((name) =>
        createDelayTestApp(db, { instanceId: `instance-${name}`, concurrency: 3 }, clock),
      ),
    );
    try {
      await Promise.all(booted.map((app) => app.delay.drain()));
      const [{ executed, leased }] = await query(
        `SELECT count(executed_at)::int AS executed, count(locked_by)::int AS leased
         FROM delayed_task WHERE id >= $1`,
        [first],
      );
      expect(executed).toBe(3000);
      expect(leased).toBe(0);
      const twice = await query(
        `SELECT task_id FROM effect WHERE task_id >= $1 GROUP BY task_id HAVING count(*) <> 1`,
        [first],
      );
      expect(twice).toEqual([]);
      expect(Number((await query(`SELECT count(*) FROM effect`))[0].count)).toBe(before + 3000);
    } finally {
      for (const app of booted) await app.close();
    }
  });

  it('takes over the tasks of an instance that died, once its lease expires', async () => {
    const [a, b, c] = apps;
    const tasks = await c.delay.scheduleMany(
      Array.from({ length: 50 }, (_, i) => ({ type: 'test.effect', delay: 2000 + i * 10 })),
    );
    expect(c.runtime.wheel.size).toBe(50);
    // c crashes: no drain, no release; its rows stay leased to it.
    await c.runtime.shutdown(false);
    const held = await query(
      `SELECT count(*)::int AS n FROM delayed_task WHERE locked_by = 'instance-c' AND executed_at IS NULL`,
    );
    expect(held[0].n).toBe(50);

    clock.advance(2600);
    await drainAll();
    // Due, but the lease (3 s) has not run out yet: nobody else may take them.
    expect(
      Number(
        (
          await query(`SELECT count(*) FROM effect WHERE task_id = ANY($1)`, [
            tasks.map((t) => t.id),
          ])
        )[0].count,
      ),
    ).toBe(0);

    clock.advance(4000);
    await Promise.all([a.runtime.refresh(), b.runtime.refresh()]);
    await drainAll();
    const rows = await query(
      `SELECT task_id, count(*)::int AS n FROM effect WHERE task_id = ANY($1) GROUP BY task_id`,
      [tasks.map((t) => t.id)],
    );
    expect(rows).toHaveLength(50);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect(await query(`SELECT id FROM delay_instance WHERE id = 'instance-c'`)).toEqual([]);
  });
});
