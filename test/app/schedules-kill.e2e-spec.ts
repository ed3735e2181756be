import pg from 'pg';
import { PURGE_IDEMPOTENCY_KEYS_SCHEDULE as PURGE } from '../../src/orders/idempotency-keys.js';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { eventually, json, startApp, type AppProcess } from './app-process.js';
import { bearer } from '../support/auth.js';

// Three processes of the compiled service on one database, the orders'
// Idempotency-Key purge every 2 s. Instances are killed (SIGKILL, mid-claim
// or mid-plan as it falls) and restarted while it runs: every occurrence
// runs exactly once, none is lost. Then all are down for longer than the
// planning window and one comes back: every occurrence overdue by then,
// planned or not, follows the catch-up policy ('one': the latest runs, the
// others are cancelled as missed or never planned, and counted), so every
// instant is either run once or counted missed.

const EVERY_MS = 2_000;
const LEASE_MS = 3_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeWithServer('a schedule across three instances killed and restarted', () => {
  let db: TestDatabase;
  let admin: pg.Client;
  const apps = new Map<string, AppProcess>();

  beforeAll(async () => {
    db = await createTestDatabase();
    admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
  });

  afterAll(async () => {
    for (const app of apps.values()) await app.kill().catch(() => undefined);
    await admin?.end();
    await db?.drop();
  });

  const start = async (id: string) => {
    const app = await startApp({
      DATABASE_URL: db.url,
      DELAY_INSTANCE_ID: id,
      DELAY_LEASE: `${LEASE_MS}ms`,
      // A 4 s ring and window: occurrences are planned 4 s ahead, so a few
      // seconds with no instance leave some unplanned, for the catch-up policy.
      DELAY_TICK_MS: '100',
      DELAY_WHEEL_SLOTS: '40',
      ORDER_IDEMPOTENCY_PURGE_EVERY: `${EVERY_MS}ms`,
    });
    apps.set(id, app);
    return app;
  };
  const kill = async (id: string) => {
    await apps.get(id)!.kill();
    apps.delete(id);
  };

  /** The purge's occurrences so far, with their fate. */
  const occurrences = async () =>
    (
      await admin.query<{ at: string; state: string; runs: number }>(
        `SELECT t.occurrence_at AS at,
                CASE WHEN executed_at IS NOT NULL THEN 'executed' WHEN cancelled_at IS NOT NULL THEN 'cancelled'
                     WHEN dead_at IS NOT NULL THEN 'dead' ELSE 'pending' END AS state,
                (SELECT count(*)::int FROM occurrence_run r WHERE r.task_id = t.id) AS runs
         FROM delayed_task t WHERE t.schedule_name = $1 ORDER BY t.occurrence_at`,
        [PURGE],
      )
    ).rows;

  /** Every instant from the first occurrence to `until`, by the rule. */
  const instants = (firstMs: number, untilMs: number) => {
    const all: number[] = [];
    for (let at = firstMs; at <= untilMs; at += EVERY_MS) all.push(at);
    return all;
  };

  it('runs every occurrence once while instances are killed and restarted, and catches up by its policy after all were down', async () => {
    await start('a');
    // A witness in the database: one row each time an occurrence's claim
    // commits it executed (the handler's deletes commit in that transaction).
    await admin.query(`
      CREATE TABLE occurrence_run (task_id bigint NOT NULL, by text);
      CREATE FUNCTION record_occurrence_run() RETURNS trigger AS $$
      BEGIN
        INSERT INTO occurrence_run VALUES (NEW.id, NEW.locked_by);
        RETURN NEW;
      END $$ LANGUAGE plpgsql;
      CREATE TRIGGER occurrence_run AFTER UPDATE OF executed_at ON delayed_task
        FOR EACH ROW WHEN (OLD.executed_at IS NULL AND NEW.executed_at IS NOT NULL
                           AND NEW.schedule_name IS NOT NULL)
        EXECUTE FUNCTION record_occurrence_run();`);
    // Occurrences due from here on are witnessed (one may have run before).
    const witnessFrom = Date.now();
    await Promise.all([start('b'), start('c')]);

    // Keys to purge (past 24 h by the database's clock) and keys to keep.
    const order = await json('POST', `${apps.get('a')!.baseUrl}/orders`, {
      userId: 'purge',
      amountCents: 1,
    });
    await admin.query(
      `INSERT INTO user_idempotency_key (user_id, key, request_hash, order_id, created_at)
       SELECT 'purge', 'old-' || i, 'h', $1, now() - interval '25 hours' FROM generate_series(1, 3000) AS i`,
      [order.body.id],
    );

    // Kill one instance every 3 s and bring it back, for 18 s: at any time one
    // or two of three are up, and leases are taken over.
    for (const id of ['a', 'b', 'c', 'a', 'b', 'c']) {
      await kill(id);
      await sleep(1_500);
      await start(id);
      await sleep(1_500);
    }
    const keptUntil = Date.now();
    const young = await fetch(`${apps.get('a')!.baseUrl}/orders`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': 'young',
        authorization: bearer('purge'),
      },
      body: JSON.stringify({ userId: 'purge', amountCents: 2 }),
    });
    expect(young.status).toBe(201);

    // Every occurrence due 2 leases ago or earlier has run, once, none missing.
    const settled = await eventually(
      occurrences,
      (rows) =>
        rows
          .filter((r) => new Date(r.at).getTime() <= keptUntil - 2 * LEASE_MS)
          .every((r) => r.state === 'executed'),
      15_000,
    );
    const firstMs = new Date(
      settled.find((r) => new Date(r.at).getTime() > witnessFrom)!.at,
    ).getTime();
    const upToMs = keptUntil - 2 * LEASE_MS;
    const ran = settled.filter((r) => {
      const at = new Date(r.at).getTime();
      return at >= firstMs && at <= upToMs;
    });
    expect(ran.map((r) => new Date(r.at).getTime())).toEqual(instants(firstMs, upToMs));
    expect(ran.every((r) => r.state === 'executed' && r.runs === 1)).toBe(true);
    const [{ missed: missedWhileUp }] = (
      await admin.query(
        `SELECT (missed + coalesce((SELECT sum(m.missed) FROM delay_schedule_missed m WHERE m.schedule_name = s.name), 0))::int AS missed FROM delay_schedule s WHERE name = $1`,
        [PURGE],
      )
    ).rows;
    expect(missedWhileUp).toBe(0);
    // The effect: expired keys gone, live ones kept.
    const keys = (
      await admin.query<{ old: number; live: number }>(
        `SELECT count(*) FILTER (WHERE key LIKE 'old-%')::int AS old,
                count(*) FILTER (WHERE key NOT LIKE 'old-%')::int AS live FROM user_idempotency_key`,
      )
    ).rows[0];
    expect(keys).toEqual({ old: 0, live: 1 });

    // All down for 12 s (three times the planning window), then one is back.
    const downAt = Date.now();
    for (const id of [...apps.keys()]) await kill(id);
    await sleep(12_000);
    await start('b');
    // Listening: it has planned (boot takes a few seconds, which count as down).
    const upAt = Date.now();
    const after = await eventually(
      occurrences,
      (rows) =>
        rows
          .filter((r) => new Date(r.at).getTime() <= upAt)
          .every((r) => r.state === 'executed' || r.state === 'cancelled') &&
        rows.some((r) => new Date(r.at).getTime() > upAt && r.state === 'executed'),
      20_000,
    );
    const [{ missed }] = (
      await admin.query(
        `SELECT (missed + coalesce((SELECT sum(m.missed) FROM delay_schedule_missed m WHERE m.schedule_name = s.name), 0))::int AS missed FROM delay_schedule s WHERE name = $1`,
        [PURGE],
      )
    ).rows;
    const lastMs = Math.max(
      ...after.filter((r) => r.state === 'executed').map((r) => new Date(r.at).getTime()),
    );
    const rows = after.filter((r) => {
      const at = new Date(r.at).getTime();
      return at >= firstMs && at <= lastMs;
    });
    // Every instant up to the last run: run exactly once, or counted missed; none twice, none lost.
    // A planned occurrence the policy dropped is cancelled, and never ran.
    const dropped = rows.filter((r) => r.state === 'cancelled');
    expect(dropped.every((r) => r.runs === 0)).toBe(true);
    const executed = rows.filter((r) => r.state !== 'cancelled');
    expect(executed.every((r) => r.state === 'executed' && r.runs === 1)).toBe(true);
    const runAt = new Set(executed.map((r) => new Date(r.at).getTime()));
    const gaps = instants(firstMs, lastMs).filter((at) => !runAt.has(at));
    expect(gaps.length).toBe(missed);
    expect(gaps.every((at) => at > downAt && at < upAt)).toBe(true);
    // The catch-up ran the latest of them, late, at the restart (and any within two leases of it).
    expect(gaps.length).toBeGreaterThan(0);
    const lastGap = Math.max(...gaps);
    expect(
      executed.some((r) => new Date(r.at).getTime() > lastGap && new Date(r.at).getTime() < upAt),
    ).toBe(true);
  }, 300_000);
});
