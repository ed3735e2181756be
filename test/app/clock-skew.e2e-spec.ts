import { existsSync } from 'node:fs';
import pg from 'pg';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { eventually, json, startApp, type AppProcess } from './app-process.js';

// Three processes of the compiled service on one database: one with a
// correct clock, one whose system clock is 10 s ahead and one 10 s behind
// (libfaketime, as an NTP failure on one host would leave it). Tasks are
// handed between them by kills. Time is the database's for every decision,
// so nothing fires before its due time by the database's clock, each task
// runs once, and after a takeover it is late by at most the lease and a second.

const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
].find((path) => existsSync(path));

const LEASE_MS = 3_000;
const PAYMENT_TIMEOUT_MS = 12_000;
const ORDERS_PER_INSTANCE = 20;

const describeSkew = LIBFAKETIME ? describeWithServer : describe.skip;

describeSkew(
  `instances whose clocks are 10 s off the database's${LIBFAKETIME ? '' : ' (skipped: libfaketime is not installed; .ci/run installs Debian faketime)'}`,
  () => {
    let db: TestDatabase;
    const apps: AppProcess[] = [];

    beforeAll(async () => {
      db = await createTestDatabase();
    });

    afterAll(async () => {
      for (const app of apps) await app.kill().catch(() => undefined);
      await db?.drop();
    });

    /** An instance whose system clock is `skew` off ('+10s', '-10s'), or correct. */
    const start = (id: string, skew?: string) =>
      startApp({
        DATABASE_URL: db.url,
        DELAY_INSTANCE_ID: id,
        DELAY_LEASE: `${LEASE_MS}ms`,
        DELAY_TICK_MS: '100',
        ORDER_PAYMENT_TIMEOUT: `${PAYMENT_TIMEOUT_MS}ms`,
        ...(skew ? { LD_PRELOAD: LIBFAKETIME!, FAKETIME: skew } : {}),
      }).then((app) => {
        apps.push(app);
        return app;
      });

    it('fires nothing before its due time by the database, each once, late after a takeover by at most the lease and a second', async () => {
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      try {
        const create = async (app: AppProcess, n: number) => {
          const ids: string[] = [];
          for (let i = 0; i < n; i++) {
            const res = await json('POST', `${app.baseUrl}/orders`, {
              userId: `skew-${i}`,
              amountCents: 100,
            });
            expect(res.status).toBe(201);
            ids.push(res.body.id);
          }
          return ids;
        };
        const leasedTo = async (id: string) =>
          [...(await leases(admin))].filter(([, by]) => by === id).map(([orderId]) => orderId);

        // Orders taken by the correct instance alone: it leases their close tasks.
        const correct = await start('correct');
        // The database's own time of each close (its migrations ran at start): a column the app does not know, filled by Postgres.
        await admin.query(
          `ALTER TABLE order_event ADD COLUMN db_at timestamptz NOT NULL DEFAULT clock_timestamp()`,
        );
        const orders = await create(correct, ORDERS_PER_INSTANCE);
        await eventually(
          () => leasedTo('correct'),
          (ids) => ids.length === orders.length,
          10_000,
        );

        // It dies; the instance 10 s ahead, the only one left, takes its tasks
        // over (or, on a slow machine, runs them once due: never early either way).
        const ahead = await start('ahead-10s', '+10s');
        expect(ahead.output()).toMatch(/System clock corrected by -1\d{4} ms/);
        const fromCorrect = await leasedTo('correct');
        expect(fromCorrect).toHaveLength(ORDERS_PER_INSTANCE);
        await correct.kill();
        await eventually(
          () => leasedTo('correct'),
          (ids) => ids.length === 0,
          PAYMENT_TIMEOUT_MS + 4 * LEASE_MS,
        );
        // Orders of its own, leased to it alone, then the instance 10 s behind starts.
        const created = await create(ahead, ORDERS_PER_INSTANCE);
        orders.push(...created);
        await eventually(
          () => leasedTo('ahead-10s'),
          (ids) => created.every((id) => ids.includes(id)),
          10_000,
        );
        const secondDue = await dueAtMs(admin, created);
        const behind = await start('behind-10s', '-10s');
        expect(behind.output()).toMatch(/System clock corrected by \+(9|10)\d{3} ms/);

        // A second before its own orders fall due the one ahead dies too: the one
        // 10 s behind takes them over.
        await sleepUntilDatabase(admin, secondDue - 1_000);
        const fromAhead = await leasedTo('ahead-10s');
        await ahead.kill();
        expect(fromAhead.length).toBeGreaterThanOrEqual(1);

        await eventually(
          async () =>
            (
              await admin.query<{ n: number }>(
                `SELECT count(*)::int AS n FROM orders WHERE status = 'CLOSED'`,
              )
            ).rows[0].n,
          (n) => n === orders.length,
          PAYMENT_TIMEOUT_MS + 4 * LEASE_MS + 10_000,
        );
        const rows = (
          await admin.query<{
            order_id: string;
            closes: number;
            early_ms: number;
            late_ms: number;
          }>(
            `SELECT t.payload->>'orderId' AS order_id,
                    count(e.id)::int AS closes,
                    (extract(epoch FROM (t.due_at - min(e.db_at))) * 1000)::float8 AS early_ms,
                    (extract(epoch FROM (max(e.db_at) - t.due_at)) * 1000)::float8 AS late_ms
             FROM delayed_task t
             JOIN order_event e ON e.order_id = (t.payload->>'orderId')::uuid AND e.type = 'CLOSED'
             WHERE t.type = 'order.close-unpaid'
             GROUP BY t.id`,
          )
        ).rows;
        expect(rows).toHaveLength(orders.length);
        const early = rows.filter((row) => row.early_ms > 0);
        expect(early).toEqual([]);
        expect(rows.filter((row) => row.closes !== 1)).toEqual([]);
        const late = rows.map((row) => row.late_ms).sort((a, b) => a - b);
        const worst = late[late.length - 1];
        // The bound holds for what was handed over before it fell due.
        const handed = new Set(fromAhead);
        const handedLate = rows.filter((row) => handed.has(row.order_id)).map((row) => row.late_ms);
        console.log(
          `clock skew: ${rows.length} orders over instances +10 s and -10 s off the database's clock; ` +
            `${fromCorrect.length} handed over from the correct one (killed early) to the one ahead, ${fromAhead.length} from the one ahead ` +
            `(killed 1 s before they were due) to the one behind; closed ${late[0].toFixed(1)} to ${worst.toFixed(1)} ms after ` +
            `their due time by the database's clock (after the second takeover: up to ${Math.max(...handedLate).toFixed(0)} ms, ` +
            `lease ${LEASE_MS} ms); none early, duplicates 0`,
        );
        expect(Math.max(...handedLate)).toBeLessThanOrEqual(LEASE_MS + 1_000);
        // The correction in use is a metric (and the admin's instance list shows it).
        const metrics = await (await fetch(`${behind.baseUrl}/metrics`)).text();
        const correction = Number(
          /^delay_clock_correction_ms\{[^}]*\} (\S+)$/m.exec(metrics)?.[1] ?? NaN,
        );
        expect(correction).toBeGreaterThan(9_000);
        expect(correction).toBeLessThan(11_000);
        const [listed] = (
          await admin.query<{ correction: number }>(
            `SELECT clock_correction_ms AS correction FROM delay_instance WHERE id = 'behind-10s'`,
          )
        ).rows;
        expect(listed.correction).toBeCloseTo(correction, -3);
      } finally {
        await admin.end();
      }
    }, 90_000);
  },
);

/** Close tasks still pending: order id → the instance they are leased to. */
async function leases(admin: pg.Client): Promise<Map<string, string>> {
  const { rows } = await admin.query<{ order_id: string; locked_by: string }>(
    `SELECT payload->>'orderId' AS order_id, locked_by FROM delayed_task
     WHERE type = 'order.close-unpaid' AND locked_by IS NOT NULL
       AND executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`,
  );
  return new Map(rows.map((row) => [row.order_id, row.locked_by]));
}

/** The earliest due time of these orders' close tasks, by the database's clock (epoch ms). */
async function dueAtMs(admin: pg.Client, orderIds: string[]): Promise<number> {
  const { rows } = await admin.query<{ ms: number }>(
    `SELECT (extract(epoch FROM min(due_at)) * 1000)::float8 AS ms FROM delayed_task
     WHERE type = 'order.close-unpaid' AND payload->>'orderId' = ANY($1::text[])`,
    [orderIds],
  );
  return rows[0].ms;
}

/** Waits, on the database's clock, until `ms`. */
async function sleepUntilDatabase(admin: pg.Client, ms: number): Promise<void> {
  const { rows } = await admin.query<{ ms: number }>(
    `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms`,
  );
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, ms - rows[0].ms)));
}
