import pg from 'pg';
import { adminUrl, describeWithServer, serverUrl } from '../support/test-database.js';
import { MINUTE, useOrdersApp } from './orders-api.js';

const app = useOrdersApp();
const BACKLOG = 100;
/** pg-pool's default idleTimeoutMillis, which TypeORM leaves as it is. */
const POOL_IDLE_TIMEOUT_MS = 10_000;

/**
 * Issue 45: the app's requests never wait behind the engine, and a backlog
 * never turns them into 5xx. After a quiet spell the server stops opening
 * connections to the database (as at max_connections, shared with other
 * services, or while a failover begins) and a backlog of closes falls due:
 * every close is in a claim, each claim held on its connection (its first
 * close waits for the order's row lock, which the test holds). The creates
 * must find connections in the share the claims leave (at least half the
 * pool of 10) already open, and answer 201, not a 5xx for a connection the
 * pool could not open.
 */
// Behind a pooler (npm run test:pgbouncer) the server's connections are the pooler's, not the app's.
const describeDirect = adminUrl === serverUrl ? describeWithServer : describe.skip;

describeDirect('creating orders while a backlog holds the claim connections', () => {
  it('answers 201 to each create, on the connections the pool opened at start', async () => {
    const { t, api, db } = app;
    const database = new URL(db.url).pathname.slice(1);
    // Named, so that the app's own connections can be counted apart.
    const locks = new pg.Client({ connectionString: db.url, application_name: 'test' });
    const watch = new pg.Client({ connectionString: db.url, application_name: 'test' });
    // On another database: Postgres refuses ALLOW_CONNECTIONS false on the current one.
    const admin = new pg.Client({ connectionString: adminUrl });
    await locks.connect();
    await watch.connect();
    await admin.connect();
    const one = async <T>(text: string) => (await watch.query(text)).rows[0] as T;
    let draining: Promise<unknown> | undefined;
    try {
      for (let i = 0; i < BACKLOG; i++)
        await api.createOrder({ userId: 'backlog', amountCents: 100 + i });
      // A quiet spell longer than pg-pool's idle timeout (10 s): a pool that
      // closes idle connections is down to what it uses when the backlog comes.
      await new Promise((resolve) => setTimeout(resolve, POOL_IDLE_TIMEOUT_MS + 1000));
      const { open } = await one<{ open: number }>(
        `SELECT count(*)::int AS open FROM pg_stat_activity
         WHERE datname = current_database() AND application_name <> 'test'`,
      );
      expect(open).toBe(db.poolSize);
      await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);

      await locks.query('BEGIN');
      await locks.query(`SELECT id FROM orders WHERE user_id = 'backlog' FOR UPDATE`);
      t.clock.advance(31 * MINUTE);
      draining = t.delay.runDue();
      // Every close is in a claim (its note lists it, committed before the
      // claim begins), and every claim waits for a lock: none will end or
      // start while the test holds them.
      const inClaims = async () => {
        const { claims, tasks } = await one<{ claims: number; tasks: number }>(
          `SELECT count(*)::int AS claims, coalesce(sum(cardinality(task_ids)), 0)::int AS tasks
           FROM delay_attempt`,
        );
        const { waiting } = await one<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return tasks >= BACKLOG && waiting === claims ? claims : 0;
      };
      let claims = 0;
      while ((claims = await inClaims()) === 0)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(claims).toBeLessThanOrEqual(db.poolSize / 2);

      // As many at once as the connections the claims leave.
      const user = api.as('shopper');
      const answers = await Promise.all(
        Array.from({ length: db.poolSize - claims }, (_, i) =>
          user.post('/orders', { userId: 'shopper', amountCents: 500 + i }),
        ),
      );
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 201));
      expect(await inClaims()).toBe(claims);
    } finally {
      await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
      await locks.query('COMMIT');
      await draining;
      await locks.end();
      await watch.end();
      await admin.end();
    }
    const [{ closed }] = await api.query<{ closed: number }>(
      `SELECT count(*)::int AS closed FROM orders WHERE user_id = 'backlog' AND status = 'CLOSED'`,
    );
    expect(closed).toBe(BACKLOG);
  }, 120_000);
});
