import { ManualClock } from 'nest-delay/testing';
// Package-internal: to make every instance hold the same tasks at once, which
// no public API does (each task is leased to one instance).
import { DelayRuntime } from '../../packages/nest-delay/src/runtime/delay.runtime.js';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { createDelayTestApp, lastTaskId, type DelayTestApp } from './delay-test-app.js';

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
          { clock },
        ),
      );
    }
  });

  afterAll(async () => {
    for (const app of apps ?? []) await app.close();
    await db?.drop();
  });

  /** Runs what is due on every instance (the clock is shared: move it first). */
  const runDueAll = (list: DelayTestApp[] = apps) =>
    Promise.all(list.map((a) => a.tester.runDue()));
  const query = <T = any>(sql: string, params?: unknown[]) => apps[0].query<T>(sql, params);
  const effectCount = async (after: string) =>
    (
      await query<{ n: number }>(`SELECT count(*)::int AS n FROM effect WHERE task_id > $1`, [
        after,
      ])
    )[0].n;

  it('runs 5,000 tasks due within a few seconds exactly once, spread over the instances', async () => {
    const after = await lastTaskId(apps[0]);
    const start = clock.now();
    // Half through the instances' APIs (round robin, as a load balancer would)...
    const viaApi = Array.from({ length: 2500 }, (_, i) => ({
      type: 'test.effect',
      runAt: start + 1000 + (i % 3000),
    }));
    for (let i = 0; i < 3; i++) {
      const results = await apps[i].delay.scheduleMany(viaApi.filter((_, j) => j % 3 === i));
      expect(results.every((r) => r.status === 'scheduled')).toBe(true);
    }
    // ...and half written by another producer straight into the table, unleased:
    // the three loaders race for them with SKIP LOCKED.
    await query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       SELECT 'test.effect', 'null', $1::timestamptz + (g % 3000) * interval '1 millisecond', $1, $1
       FROM generate_series(1, 2500) g`,
      [new Date(start + 500)],
    );
    await Promise.all(apps.map((a) => a.tester.refresh()));
    const [{ unleased }] = await query(
      `SELECT count(*)::int AS unleased FROM delayed_task WHERE id > $1 AND locked_by IS NULL`,
      [after],
    );
    expect(unleased).toBe(0);
    // Some tasks held by every instance at once: the claim must still run them once.
    const shared = await query<{ id: string; due_at: Date }>(
      `SELECT id, due_at FROM delayed_task WHERE id > $1 ORDER BY id LIMIT 300`,
      [after],
    );
    for (const app of apps) {
      const { wheel } = app.moduleRef.get(DelayRuntime);
      for (const row of shared) wheel.hold(row.id, row.due_at.getTime());
      expect(shared.every((row) => app.tester.isHeld(row.id))).toBe(true);
    }

    // A second at a time, shorter than the lease (3 s): one move past a lease
    // would let the first instance to beat take over another whose heartbeat
    // waits behind its claims for a connection (it did on a loaded CI machine).
    for (let step = 0; step < 4; step++) {
      clock.advance(1000);
      await runDueAll();
    }

    const [{ tasks, executed }] = await query(
      `SELECT count(*)::int AS tasks, count(executed_at)::int AS executed
       FROM delayed_task WHERE id > $1`,
      [after],
    );
    expect(tasks).toBe(5000);
    expect(executed).toBe(5000);
    const perTask = await query(
      `SELECT task_id, count(*)::int AS n FROM effect WHERE task_id > $1
       GROUP BY task_id HAVING count(*) <> 1`,
      [after],
    );
    expect(perTask).toEqual([]);
    expect(await effectCount(after)).toBe(5000);
    const perInstance = await query<{ instance: string; n: number }>(
      `SELECT instance, count(*)::int AS n FROM effect WHERE task_id > $1
       GROUP BY instance ORDER BY instance`,
      [after],
    );
    expect(perInstance.length).toBeGreaterThan(1);
    expect(perInstance.reduce((sum, r) => sum + r.n, 0)).toBe(5000);
  });

  it('two instances booting on a backlog claim it from the table together, each task once', async () => {
    const after = await lastTaskId(apps[0]);
    await query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       SELECT 'test.effect', 'null', $1::timestamptz - g * interval '10 milliseconds', $1, $1
       FROM generate_series(1, 3000) g`,
      [new Date(clock.now() - 60_000)],
    );
    const booted = await Promise.all(
      ['d', 'e'].map((name) =>
        createDelayTestApp(db, { instanceId: `instance-${name}`, concurrency: 3 }, { clock }),
      ),
    );
    try {
      await runDueAll([...apps, ...booted]);
      const [{ executed, leased }] = await query(
        `SELECT count(executed_at)::int AS executed, count(locked_by)::int AS leased
         FROM delayed_task WHERE id > $1`,
        [after],
      );
      expect(executed).toBe(3000);
      expect(leased).toBe(0);
      const twice = await query(
        `SELECT task_id FROM effect WHERE task_id > $1 GROUP BY task_id HAVING count(*) <> 1`,
        [after],
      );
      expect(twice).toEqual([]);
      expect(await effectCount(after)).toBe(3000);
    } finally {
      for (const app of booted) await app.close();
    }
  });

  it('takes over the tasks of an instance that died, once its lease expires', async () => {
    const [a, b, c] = apps;
    const results = await c.delay.scheduleMany(
      Array.from({ length: 50 }, (_, i) => ({ type: 'test.effect', delay: 2000 + i * 10 })),
    );
    const ids = results.map((r) => r.id);
    expect(ids.every((id) => c.tester.isHeld(id))).toBe(true);
    // c crashes: nothing more runs, no release; its rows stay leased to it.
    await c.tester.crash();
    const held = await query(
      `SELECT count(*)::int AS n FROM delayed_task
       WHERE id = ANY($1) AND locked_by = 'instance-c' AND executed_at IS NULL`,
      [ids],
    );
    expect(held[0].n).toBe(50);

    clock.advance(2600);
    // The survivors beat as time passes (a gap of more than two leases between
    // beats would read as a clock jump and give every lease one more lease).
    await Promise.all([a.tester.refresh(), b.tester.refresh()]);
    await runDueAll();
    // Due, but the lease (3 s) has not run out yet: nobody else may take them.
    const effectsOf = () =>
      query<{ task_id: string; n: number }>(
        `SELECT task_id, count(*)::int AS n FROM effect WHERE task_id = ANY($1) GROUP BY task_id`,
        [ids],
      );
    expect(await effectsOf()).toEqual([]);

    clock.advance(4000);
    await Promise.all([a.tester.refresh(), b.tester.refresh()]);
    await runDueAll();
    const rows = await effectsOf();
    expect(rows).toHaveLength(50);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect(await query(`SELECT id FROM delay_instance WHERE id = 'instance-c'`)).toEqual([]);
  });
});
