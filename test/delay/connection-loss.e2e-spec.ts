import pg from 'pg';
import { serverUrl, describeWithServer } from '../support/test-database.js';
import { SECOND, useDelayTestApp } from './delay-test-app.js';

// The server ends a session of the app's pool (pg_terminate_backend, a
// failover, a proxy's idle timeout) while it is lent out, between two
// statements. pg-pool lends a client without its error listener, and a pg
// client with none turns that into an uncaught exception that kills the
// process: the next statement must fail instead, and the tasks run later.
describeWithServer('a connection terminated between two statements', () => {
  const app = useDelayTestApp({ retry: { baseDelay: '1s', jitter: 0 } });

  /** Ends the session `pid` from outside and waits until its client has heard of it. */
  async function terminate(pid: number): Promise<void> {
    const [database] = await app.t.query<{ name: string }>(`SELECT current_database() AS name`);
    const admin = new pg.Client({
      connectionString: serverUrl!.replace(/\/[^/]*$/, `/${database.name}`),
    });
    await admin.connect();
    try {
      await admin.query(`SELECT pg_terminate_backend($1)`, [pid]);
      while ((await admin.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [pid])).rowCount)
        await new Promise((resolve) => setTimeout(resolve, 5));
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await admin.end();
    }
  }

  it('lent out by the pool and idle: the process lives on, the next statement fails', async () => {
    const pool = (app.t.dataSource.driver as unknown as { master: pg.Pool }).master;
    const client = await pool.connect();
    const [{ pid }] = (await client.query(`SELECT pg_backend_pid() AS pid`)).rows;
    await terminate(pid);
    await expect(client.query('SELECT 1')).rejects.toThrow();
    client.release(true);
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('in a claim, its handler between two statements: that claim fails, the task runs once after', async () => {
    const { t } = app;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let pid: number | undefined;
    t.behaviour.afterEffect = async (_payload, context) => {
      if (pid !== undefined) return;
      [{ pid }] = await context.manager.query(`SELECT pg_backend_pid() AS pid`);
      await held;
    };
    const task = await t.delay.schedule({ type: 'test.effect', delay: '1s' });
    t.clock.advance(SECOND);
    const run = t.tester.runDue();
    while (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
    await terminate(pid);
    release();
    await run;
    expect(await t.effects(task.id)).toBe(0);

    await t.tester.advance('2s');
    expect(await t.effects(task.id)).toBe(1);
    const [row] = await t.query(
      `SELECT executed_at IS NOT NULL AS executed FROM delayed_task WHERE id = $1`,
      [task.id],
    );
    expect(row.executed).toBe(true);
  });
});
