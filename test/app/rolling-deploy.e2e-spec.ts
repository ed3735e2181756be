import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { json, startApp, type AppProcess } from './app-process.js';
import { bearer } from '../support/auth.js';
import { buildPreviousRelease, findPreviousRelease } from '../support/previous-release.js';
import { createTestDatabase, serverUrl, type TestDatabase } from '../support/test-database.js';

/**
 * A rolling deploy over the previous release (.ci/previous-release), as
 * operators do it: two instances of the previous release's build serve
 * orders while their tasks fall due; the current build migrates the
 * database, then replaces them one by one (the new one up and in the
 * rotation, the old one out of it, drained, SIGTERM). Judged in the
 * database: each order's task effects exactly once, none early, nothing
 * left overdue, no deadlock; every request answered below 500, every
 * instance booted and stopped cleanly. The lateness seen while the deploy
 * runs is printed (bench/HISTORY.md keeps it), not asserted.
 */
const previous = findPreviousRelease();
const skipped = !serverUrl ? 'needs TEST_DATABASE_URL, a Postgres server' : previous.missing;
const describeWithPreviousRelease: jest.Describe = skipped
  ? (((name: string, fn: () => void) =>
      describe.skip(`${name} (skipped: ${skipped})`, fn)) as unknown as jest.Describe)
  : describe;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The order types no shared limit holds back: their lateness is the engine's, not a rate's. */
const UNLIMITED_TYPES = ['order.close-unpaid', 'order.auto-review'];

interface Instance {
  name: string;
  app: AppProcess;
  /** Requests sent to it and not answered yet: it leaves the rotation, then drains, then stops. */
  inFlight: number;
}

describeWithPreviousRelease('a rolling deploy over the previous release', () => {
  let releaseDir: string;
  let db: TestDatabase;
  const instances: Instance[] = [];

  const sql = async <T>(text: string, params: unknown[] = []): Promise<T[]> => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      return (await client.query(text, params)).rows as T[];
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    const started = Date.now();
    releaseDir = await buildPreviousRelease(previous.commit!);
    console.log(
      `previous release ${previous.commit!.slice(0, 12)} ready in ${releaseDir} after ${Date.now() - started} ms`,
    );
    db = await createTestDatabase();
  }, 900_000);

  afterAll(async () => {
    for (const instance of instances) await instance.app.kill().catch(() => undefined);
    await db?.drop();
  });

  it('replaces old instances one by one: tasks once, none early, no 5xx, no deadlock', async () => {
    const env = {
      DATABASE_URL: db.url,
      DB_POOL_SIZE: '5',
      ORDER_PAYMENT_TIMEOUT: '3s',
      ORDER_AUTO_REVIEW_DELAY: '3s',
      // A recurring schedule both releases declare, firing all along.
      ORDER_IDEMPOTENCY_PURGE_EVERY: '1s',
      DELAY_TICK_MS: '100',
      DELAY_LEASE: '3s',
      // One JSON object a line, so that what each instance logged as an error can be read.
      LOG_FORMAT: 'json',
    };
    const boot = async (name: string, cwd?: string): Promise<Instance> => {
      // startApp fails the test if the process exits before it listens.
      const app = await startApp({ ...env, DELAY_INSTANCE_ID: name }, 60_000, { build: cwd });
      const instance = { name, app, inFlight: 0 };
      instances.push(instance);
      return instance;
    };

    const rotation: Instance[] = [];
    const answers = new Map<number, number>();
    const serverErrors: string[] = [];
    const failures: string[] = [];
    let turn = 0;
    const request = async (
      method: string,
      path: string,
      body?: unknown,
      as?: { user: string; idempotencyKey: string },
    ) => {
      const target = rotation[turn++ % rotation.length];
      target.inFlight++;
      try {
        const res = as
          ? await json(method, `${target.app.baseUrl}${path}`, body, bearer(as.user), {
              'idempotency-key': as.idempotencyKey,
            })
          : await json(method, `${target.app.baseUrl}${path}`, body);
        answers.set(res.status, (answers.get(res.status) ?? 0) + 1);
        if (res.status >= 500) {
          serverErrors.push(
            `${target.name} ${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`,
          );
        }
        return res;
      } catch (error) {
        failures.push(`${target.name} ${method} ${path}: ${(error as Error).message}`);
        return undefined;
      } finally {
        target.inFlight--;
      }
    };
    /** One customer after another: a third leave it unpaid, a third pay and finish, a third cancel. */
    let loading = true;
    const customer = async (n: number) => {
      for (let i = 0; loading; i++) {
        // As the customer, with an Idempotency-Key sent twice (a client's retry), each time
        // to the next instance: keys must hold across releases while both run.
        const create = () =>
          request(
            'POST',
            '/orders',
            { userId: `deploy-${n}`, amountCents: 100 },
            { user: `deploy-${n}`, idempotencyKey: `deploy-${n}-${i}` },
          );
        const created = await create();
        const retried = await create();
        if (created?.status === 201 && retried?.body?.id !== created.body.id) {
          failures.push(
            `deploy-${n}'s retry of key ${i} answered ${retried?.status} ${JSON.stringify(retried?.body)}, not its order ${created.body.id}`,
          );
        }
        if (created?.status === 201) {
          const id = created.body.id as string;
          if ((n + i) % 3 === 1) {
            if ((await request('POST', `/orders/${id}/pay`))?.status === 200) {
              await request('POST', `/orders/${id}/finish`);
            }
          } else if ((n + i) % 3 === 2) {
            await request('POST', `/orders/${id}/cancel`);
          }
          await request('GET', `/orders/${id}`);
        }
        await sleep(50);
      }
    };
    const steps: string[] = [];
    const replace = async (old: Instance, name: string) => {
      const bootStart = Date.now();
      rotation.push(await boot(name));
      const stopStart = Date.now();
      rotation.splice(rotation.indexOf(old), 1);
      while (old.inFlight > 0) await sleep(10);
      expect(old.app.child.exitCode).toBeNull();
      expect(await old.app.stop('SIGTERM')).toBe(0);
      steps.push(
        `${name} booted in ${stopStart - bootStart} ms, ${old.name} drained and stopped in ${Date.now() - stopStart} ms`,
      );
    };

    const [{ deadlocks: deadlocksBefore }] = await sql<{ deadlocks: number }>(
      `SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()`,
    );
    // The previous release's first instance migrates the empty database at boot, then the second starts.
    rotation.push(await boot('old-1', releaseDir));
    rotation.push(await boot('old-2', releaseDir));
    const customers = Promise.all([0, 1, 2, 3].map(customer));
    await sleep(6000);

    const deployStart = new Date();
    const migrated = await promisify(execFile)(
      process.execPath,
      ['dist/src/database/migrate.js', 'run'],
      { env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url } },
    );
    const migratedIn = Date.now() - deployStart.getTime();
    const [old1, old2] = rotation;
    await replace(old1, 'new-1');
    await sleep(3000);
    await replace(old2, 'new-2');
    const deployEnd = new Date();
    await sleep(6000);
    loading = false;
    await customers;

    // Every task that fell due has run (the customer notifications follow at their rate).
    const deadline = Date.now() + 60_000;
    for (;;) {
      const [{ overdue }] = await sql<{ overdue: number }>(
        `SELECT count(*)::int AS overdue FROM delayed_task
         WHERE executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL AND due_at <= now()`,
      );
      const [{ open }] = await sql<{ open: number }>(
        `SELECT count(*)::int AS open FROM orders
         WHERE status = 'PENDING_PAYMENT' OR (status = 'FINISHED' AND review_status = 'NONE')`,
      );
      if (overdue === 0 && open === 0) break;
      if (Date.now() > deadline) {
        throw new Error(`after 60 s: ${overdue} tasks overdue, ${open} orders still waiting`);
      }
      await sleep(200);
    }

    expect(serverErrors).toEqual([]);
    expect(failures).toEqual([]);
    for (const instance of instances.slice(2)) expect(instance.app.child.exitCode).toBeNull();
    // No effect twice: in these flows an order has each event at most once.
    const twice = await sql(
      `SELECT order_id, type, count(*)::int AS n FROM order_event
       GROUP BY order_id, type HAVING count(*) > 1`,
    );
    expect(twice).toEqual([]);
    // Each timeout's effects, once each: the close and the customer's notification.
    const [timeouts] = await sql<{ closed: number; unexplained: number }>(
      `SELECT count(*)::int AS closed,
              count(*) FILTER (WHERE
                (SELECT count(*) FROM order_event e WHERE e.order_id = o.id AND e.type = 'CLOSED') <> 1
                OR (SELECT count(*) FROM order_event e WHERE e.order_id = o.id AND e.type = 'CUSTOMER_NOTIFIED') <> 1
              )::int AS unexplained
       FROM orders o WHERE close_reason = 'PAYMENT_TIMEOUT'`,
    );
    expect(timeouts.unexplained).toBe(0);
    const [reviews] = await sql<{ auto: number; unexplained: number }>(
      `SELECT count(*)::int AS auto,
              count(*) FILTER (WHERE (SELECT count(*) FROM order_event e
                WHERE e.order_id = o.id AND e.type = 'AUTO_REVIEWED') <> 1)::int AS unexplained
       FROM orders o WHERE review_status = 'AUTO_REVIEWED'`,
    );
    expect(reviews.unexplained).toBe(0);
    // None early, by the engine's record and by the orders' own.
    const early = await sql(
      `SELECT id, type, due_at, executed_at FROM delayed_task WHERE executed_at < due_at
       UNION ALL SELECT NULL, 'close', payment_deadline, closed_at FROM orders
         WHERE close_reason = 'PAYMENT_TIMEOUT' AND closed_at < payment_deadline
       UNION ALL SELECT NULL, 'auto-review', auto_review_at, reviewed_at FROM orders
         WHERE review_status = 'AUTO_REVIEWED' AND reviewed_at < auto_review_at`,
    );
    expect(early).toEqual([]);
    expect(
      await sql(`SELECT id, type, last_error FROM delayed_task WHERE dead_at IS NOT NULL`),
    ).toEqual([]);
    // The deploy happened under load: orders closed and reviewed by tasks that fell due during it.
    expect(timeouts.closed).toBeGreaterThan(0);
    expect(reviews.auto).toBeGreaterThan(0);
    const [duringDeploy] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task WHERE type = ANY($1) AND due_at BETWEEN $2 AND $3`,
      [UNLIMITED_TYPES, deployStart, deployEnd],
    );
    expect(duringDeploy.n).toBeGreaterThan(0);

    for (const instance of instances.slice(2)) expect(await instance.app.stop('SIGTERM')).toBe(0);
    // Deadlocks: none counted for the database, none the instances were told of.
    const [{ deadlocks }] = await sql<{ deadlocks: number }>(
      `SELECT deadlocks::int FROM pg_stat_database WHERE datname = current_database()`,
    );
    expect(deadlocks).toBe(deadlocksBefore);
    expect(
      instances.filter((i) => /deadlock detected/i.test(i.app.output())).map((i) => i.name),
    ).toEqual([]);
    // Nobody is paged: no instance logged an error, at boot, at work or at its stop.
    const logged = (level: string) =>
      instances.flatMap((i) =>
        i.app
          .output()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { level: string; msg?: string; context?: string })
          .filter((entry) => entry.level === level)
          .map((entry) => `${i.name} ${entry.context ?? ''}: ${entry.msg ?? ''}`),
      );
    expect(logged('info').filter((line) => line.includes('Listening on'))).toHaveLength(4);
    expect([...logged('fatal'), ...logged('error')]).toEqual([]);

    const lateness = async (from: Date, to: Date) => {
      const [row] = await sql<{ n: number; max_ms: number; p99_ms: number }>(
        `SELECT count(*)::int AS n,
                round(extract(epoch FROM max(executed_at - due_at)) * 1000)::int AS max_ms,
                round(extract(epoch FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY executed_at - due_at)) * 1000)::int AS p99_ms
         FROM delayed_task WHERE type = ANY($1) AND due_at >= $2 AND due_at < $3`,
        [UNLIMITED_TYPES, from, to],
      );
      return `${row.n} tasks, lateness max ${row.max_ms} ms, p99 ${row.p99_ms} ms`;
    };
    const statuses = [...answers].sort(([a], [b]) => a - b).map(([s, n]) => `${s}: ${n}`);
    console.log(
      `rolling deploy from ${previous.commit!.slice(0, 12)}: migrated in ${migratedIn} ms (${migrated.stdout.trim()}); ` +
        `deploy took ${deployEnd.getTime() - deployStart.getTime()} ms (${steps.join('; ')}); answers ${statuses.join(', ')}; ` +
        `${timeouts.closed} orders closed by their timeout, ${reviews.auto} auto-reviewed; duplicates 0, early 0; ` +
        `warnings logged: ${JSON.stringify(logged('warn'))}\n` +
        `  before the deploy: ${await lateness(new Date(0), deployStart)}\n` +
        `  during the deploy: ${await lateness(deployStart, deployEnd)}\n` +
        `  after the deploy: ${await lateness(deployEnd, new Date())}`,
    );
  }, 300_000);
});
