import pg from 'pg';
import { eventually, json, startApp, type AppProcess } from './app-process.js';
import {
  describeWithPrivatePostgres,
  startPrivatePostgres,
  type PrivatePostgres,
} from '../support/private-postgres.js';

/**
 * The compiled service on a Postgres of the test's own, stopped while a burst
 * of payment timeouts is firing and started again seconds later. The process
 * must stay up, answer 503s naming the database meanwhile, and close every
 * order exactly once after (judged in the database: one CLOSED event each,
 * nothing overdue left pending).
 */
const ORDERS = 150;

describeWithPrivatePostgres('the database stops during a burst, then comes back', () => {
  let postgres: PrivatePostgres;
  let app: AppProcess | undefined;
  let databaseUrl: string;

  const sql = async <T>(text: string, params: unknown[] = []): Promise<T[]> => {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      return (await client.query(text, params)).rows as T[];
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query('CREATE DATABASE orders');
    await admin.end();
    databaseUrl = postgres.url.replace(/\/postgres$/, '/orders');
  }, 120_000);

  afterAll(async () => {
    await app?.kill();
    postgres?.destroy();
  });

  it('stays up, answers 503 while it is down, and closes every order once after', async () => {
    app = await startApp({
      DATABASE_URL: databaseUrl,
      ORDER_PAYMENT_TIMEOUT: '3s',
      DELAY_TICK_MS: '100',
      DELAY_LEASE: '3s',
    });
    const ids: string[] = [];
    for (let i = 0; i < ORDERS; i += 25) {
      const created = await Promise.all(
        Array.from({ length: 25 }, () =>
          json('POST', `${app!.baseUrl}/orders`, { userId: 'restart', amountCents: 100 }),
        ),
      );
      for (const res of created) {
        expect(res.status).toBe(201);
        ids.push(res.body.id);
      }
    }
    const [{ first }] = await sql<{ first: Date }>(
      `SELECT min(payment_deadline) AS first FROM orders`,
    );
    // Stop it just after the first orders fell due: the burst is firing.
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, first.getTime() + 150 - Date.now())),
    );
    postgres.stop();
    const stoppedAt = Date.now();

    const down = await json('GET', `${app.baseUrl}/orders/${ids[0]}`);
    expect(down.status).toBe(503);
    expect(down.body.message).toMatch(/database/i);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(app.child.exitCode).toBeNull();

    postgres.start();
    const startedAt = Date.now();
    await eventually(
      () =>
        sql<{ open: number }>(`SELECT count(*)::int AS open FROM orders WHERE status <> 'CLOSED'`),
      ([row]) => row.open === 0,
      60_000,
    );
    const events = await sql<{ order_id: string; closed: number }>(
      `SELECT o.id AS order_id, count(e.id)::int AS closed
       FROM orders o LEFT JOIN order_event e ON e.order_id = o.id AND e.type = 'CLOSED'
       GROUP BY o.id`,
    );
    expect(events).toHaveLength(ORDERS);
    expect(events.filter((row) => row.closed !== 1)).toEqual([]);
    // Nothing left behind: the closes' customer notifications follow at their rate (20 a second).
    await eventually(
      () =>
        sql<{ overdue: number }>(
          `SELECT count(*)::int AS overdue FROM delayed_task
           WHERE executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL AND due_at <= now()`,
        ),
      ([row]) => row.overdue === 0,
      60_000,
    );
    console.log(
      `database restart: ${ORDERS} orders, down ${startedAt - stoppedAt} ms, every order closed ` +
        `${Date.now() - startedAt} ms after it came back; duplicates 0, lost 0`,
    );
    expect(await app.stop()).toBe(0);
    app = undefined;
  }, 180_000);

  it('closes every order once while its connections are terminated again and again', async () => {
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query('CREATE DATABASE orders_kill');
    databaseUrl = postgres.url.replace(/\/postgres$/, '/orders_kill');
    app = await startApp({
      DATABASE_URL: databaseUrl,
      ORDER_PAYMENT_TIMEOUT: '2s',
      DELAY_TICK_MS: '100',
      DELAY_LEASE: '3s',
    });
    for (let i = 0; i < ORDERS; i += 25) {
      await Promise.all(
        Array.from({ length: 25 }, () =>
          json('POST', `${app!.baseUrl}/orders`, { userId: 'kill', amountCents: 100 }),
        ),
      );
    }
    // Every 200 ms for 5 s, from when the burst starts: kill every connection the app holds.
    let kills = 0;
    const started = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 1800));
    while (Date.now() - started < 7000) {
      const { rowCount } = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = 'orders_kill' AND pid <> pg_backend_pid()`,
      );
      kills += rowCount ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await admin.end();
    await eventually(
      () =>
        sql<{ open: number }>(`SELECT count(*)::int AS open FROM orders WHERE status <> 'CLOSED'`),
      ([row]) => row.open === 0,
      60_000,
    ).catch(async (error: Error) => {
      // Say where the stragglers are, and what the app said, instead of only how many.
      const stuck = await sql(
        `SELECT id, due_at, locked_by, attempts, interrupted_at, dead_at, last_error
         FROM delayed_task WHERE executed_at IS NULL LIMIT 5`,
      );
      const instances = await sql(`SELECT * FROM delay_instance`);
      throw new Error(
        `${error.message}\nnot executed: ${JSON.stringify(stuck)}\ninstances: ${JSON.stringify(instances)}\n` +
          `app output (end):\n${app!.output().slice(-4000)}`,
      );
    });
    const events = await sql<{ closed: number }>(
      `SELECT count(e.id)::int AS closed
       FROM orders o LEFT JOIN order_event e ON e.order_id = o.id AND e.type = 'CLOSED'
       GROUP BY o.id`,
    );
    expect(events).toHaveLength(ORDERS);
    expect(events.filter((row) => row.closed !== 1)).toEqual([]);
    expect(kills).toBeGreaterThan(0);
    expect(app.child.exitCode).toBeNull();
    console.log(
      `connections killed: ${ORDERS} orders, ${kills} connections terminated during the burst, ` +
        `every order closed ${Date.now() - started} ms after the burst began; duplicates 0, lost 0`,
    );
    expect(await app.stop()).toBe(0);
    app = undefined;
  }, 180_000);
});
