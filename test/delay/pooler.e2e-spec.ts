import { spawn, type ChildProcess } from 'node:child_process';
import { Injectable, Module } from '@nestjs/common';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { DelayedTaskHandler, delayMigrations, type TaskContext } from 'nest-delay';
import { ATTEMPT_LOCK_CLASS } from '../../packages/nest-delay/src/claim/claim-statements.js';
import { eventually } from '../app/app-process.js';
import {
  describeWithPgbouncer,
  startPgbouncer,
  throughPgbouncer,
  type PrivatePgbouncer,
} from '../support/pgbouncer.js';
import { adminUrl, createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { createDelayTestApp, SECOND } from './delay-test-app.js';

/**
 * The engine behind PgBouncer in transaction mode, as most managed Postgres
 * offerings run it: a server connection is lent to a client for one
 * transaction, then to another. Whatever the engine kept on a session between
 * two transactions would then be on someone else's session. These fail the
 * day it relies on session state: the claims' attempt notes hold a session
 * advisory lock, which only stays on its server connection because the
 * engine sends the statements around it in one message with the transaction
 * they belong to (see attempt-notes.ts).
 */

/** Server connections PgBouncer opens per database: fewer than the claims and pools ask for. */
const POOL_SIZE = 3;
/** Tasks each instance schedules at boot, besides one that hangs. */
const BURST = 120;
const FAIL_EVERY = 8;

/** The same database on the server itself (not through any pooler), for what the test watches. */
function directUrl(db: TestDatabase): string {
  return Object.assign(new URL(adminUrl!), { pathname: new URL(db.url).pathname }).toString();
}

async function pendingTasks(admin: pg.Client) {
  const { rows } = await admin.query(
    `SELECT id, type, locked_by, attempts, last_error FROM delayed_task
     WHERE executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`,
  );
  return rows;
}

/** Advisory locks of the attempt notes' class held in `database`, by whichever session. */
async function noteLocks(admin: pg.Client, database: string) {
  const { rows } = await admin.query<{ pid: number; note: number; state: string }>(
    `SELECT l.pid, l.objid::int AS note, a.state FROM pg_locks l
     JOIN pg_database d ON d.oid = l.database
     LEFT JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.classid = $1 AND d.datname = $2 AND l.granted`,
    [ATTEMPT_LOCK_CLASS, database],
  );
  return rows;
}

interface Worker {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** test/fixtures/pooler-worker.mjs as instance `instanceId`, once it has booted. */
async function startWorker(url: string, instanceId: string, hang: boolean): Promise<Worker> {
  const child = spawn(process.execPath, ['test/fixtures/pooler-worker.mjs'], {
    env: {
      PATH: process.env.PATH ?? '',
      NO_COLOR: '1',
      DATABASE_URL: url,
      INSTANCE_ID: instanceId,
      BURST: String(BURST),
      FAIL_EVERY: String(FAIL_EVERY),
      ...(hang ? { HANG: '1' } : {}),
      // The doomed instance's claims last long enough to be seen in flight
      // (polled every 100 ms) before its burst is done, however loaded the machine.
      ...(hang ? {} : { SLEEP_MS: '80' }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${instanceId} did not boot:\n${output}`)),
      30_000,
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${instanceId} exited with ${code} while booting:\n${output}`));
    });
  });
  return { child, output: () => output, exited };
}

describeWithPgbouncer('behind PgBouncer in transaction mode', () => {
  let pgbouncer: PrivatePgbouncer;
  let db: TestDatabase;
  let admin: pg.Client;
  let database: string;

  beforeAll(async () => {
    pgbouncer = await startPgbouncer({ serverUrl: adminUrl!, poolSize: POOL_SIZE });
    db = await createTestDatabase();
    database = new URL(db.url).pathname.slice(1);
    admin = new pg.Client({ connectionString: directUrl(db) });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    await db?.drop();
    await pgbouncer?.stop();
  });

  it('two instances on a pool of three: reruns, a cut-off and a takeover; every task once, no lock left', async () => {
    const migrations = new DataSource({
      type: 'postgres',
      url: directUrl(db),
      migrations: delayMigrations,
      migrationsTransactionMode: 'each',
    });
    await migrations.initialize();
    await migrations.runMigrations();
    await migrations.destroy();
    await admin.query(
      `CREATE TABLE pooler_effect (task_id bigint NOT NULL, instance text NOT NULL, attempt int NOT NULL)`,
    );

    const url = throughPgbouncer(pgbouncer, db.url);
    // The hanging task is the survivor's: one cut off on an instance that dies
    // mid-claim is stranded, with or without a pooler (reported separately).
    const doomed = await startWorker(url, 'doomed', false);
    const survivor = await startWorker(url, 'survivor', true);
    let serverConnections = 0;
    const watching = setInterval(() => {
      void admin
        .query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
          [database],
        )
        .then(({ rows }) => (serverConnections = Math.max(serverConnections, rows[0].n)))
        .catch(() => undefined);
    }, 50);
    try {
      // Killed mid-burst, with a claim of its own in flight (its note locked):
      // the survivor takes its lease over once it expires.
      await eventually(
        () =>
          admin
            .query<{ effects: number; claiming: number }>(
              `SELECT (SELECT count(*) FROM pooler_effect WHERE instance = 'doomed')::int AS effects,
                      (SELECT count(*) FROM delay_attempt a JOIN pg_locks l
                         ON l.locktype = 'advisory' AND l.classid = $1 AND l.objid = a.id AND l.granted
                        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                       WHERE a.instance_id = 'doomed')::int AS claiming`,
              [ATTEMPT_LOCK_CLASS],
            )
            .then(({ rows }) => rows[0]),
        (n) => n.effects >= 10 && n.claiming > 0,
        30_000,
      );
      doomed.child.kill('SIGKILL');
      await doomed.exited;
      await eventually(
        () => pendingTasks(admin),
        (rows) => rows.length === 0,
        60_000,
      ).catch((error: Error) => {
        throw new Error(`${error.message}\nsurvivor's log:\n${survivor.output()}`);
      });
      survivor.child.kill('SIGINT');
      expect(await survivor.exited).toBe(0);
    } finally {
      clearInterval(watching);
      doomed.child.kill('SIGKILL');
      survivor.child.kill('SIGKILL');
    }

    // Every work task ran once: exactly one committed effect each.
    const { rows: runs } = await admin.query(
      `SELECT t.type, count(*)::int AS tasks, min(e.runs)::int AS fewest, max(e.runs)::int AS most,
              count(*) FILTER (WHERE t.executed_at IS NOT NULL)::int AS executed,
              count(*) FILTER (WHERE t.dead_at IS NOT NULL)::int AS dead
       FROM delayed_task t
       CROSS JOIN LATERAL (SELECT count(*) AS runs FROM pooler_effect WHERE task_id = t.id) e
       GROUP BY t.type ORDER BY t.type`,
    );
    expect(runs).toEqual([
      // Cut off at both its attempts: nothing it wrote ever committed.
      { type: 'pooler.hang', tasks: 1, fewest: 0, most: 0, executed: 0, dead: 1 },
      { type: 'pooler.work', tasks: 2 * BURST, fewest: 1, most: 1, executed: 2 * BURST, dead: 0 },
    ]);
    const { rows: failing } = await admin.query(
      `SELECT min(attempts)::int AS attempts FROM delayed_task
       WHERE type = 'pooler.work' AND (payload->>'fail')::int > 0`,
    );
    expect(failing[0].attempts).toBeGreaterThanOrEqual(2);
    const { rows: hung } = await admin.query(
      `SELECT last_error FROM delayed_task WHERE type = 'pooler.hang'`,
    );
    for (const { last_error } of hung) expect(last_error).toMatch(/did not stop when its signal/);
    // The survivor ran what the doomed instance had scheduled and not run.
    const { rows: takenOver } = await admin.query(
      `SELECT count(*)::int AS n FROM pooler_effect e JOIN delayed_task t ON t.id = e.task_id
       WHERE t.payload->>'by' = 'doomed' AND e.instance = 'survivor'`,
    );
    expect(takenOver[0].n).toBeGreaterThan(0);
    // Its claim in flight died with it: the survivor found that note dead (its lock gone
    // with the killed client's server session) and charged the attempt.
    const { rows: charged } = await admin.query(
      `SELECT count(*)::int AS n FROM delayed_task
       WHERE last_error ~ 'cut off: instance doomed stopped or died'`,
    );
    expect(charged[0].n).toBeGreaterThan(0);

    // The pool was that small: no more server sessions than PgBouncer's pool at any time.
    expect(serverConnections).toBeGreaterThan(0);
    expect(serverConnections).toBeLessThanOrEqual(POOL_SIZE);
    // Both instances are gone, PgBouncer still keeps its server sessions open: a
    // note's lock left on one of them, for whichever client it serves next, shows here.
    const { rows: open } = await admin.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
      [database],
    );
    expect(open[0].n).toBeGreaterThan(0);
    expect(await noteLocks(admin, database)).toEqual([]);
  }, 120_000);
});

@Injectable()
class CommitFailures {
  /** Its row breaks a deferred foreign key: the claim's COMMIT fails, and the batch reruns with savepoints. */
  @DelayedTaskHandler('test.fails-at-commit')
  async failsAtCommit(_payload: unknown, { manager }: TaskContext) {
    await manager.query(`INSERT INTO deferred_child (parent_id) VALUES (-1)`);
  }
}

@Module({ providers: [CommitFailures] })
class CommitFailuresModule {}

/**
 * A claim whose COMMIT fails: the note's lock, taken by this claim's session,
 * should go once the claim is over. Through PgBouncer in transaction mode
 * too: the deferred constraints are checked (SET CONSTRAINTS ALL IMMEDIATE)
 * in the message before COMMIT, so their failure leaves the transaction
 * open, and the claim rolls back and begins again in one message (the rerun,
 * with savepoints, charges the task that broke the constraint), so PgBouncer never
 * gets the session back with the lock on it. (Before the first fix, each
 * such claim left one lock on a pooled session for server_lifetime; before
 * the second, the claim failed as a whole and was retried every second,
 * its task never charged.)
 */
describeWithPgbouncer('a claim whose COMMIT fails', () => {
  let pgbouncer: PrivatePgbouncer;
  let admin: pg.Client;
  const databases: TestDatabase[] = [];

  beforeAll(async () => {
    pgbouncer = await startPgbouncer({ serverUrl: adminUrl!, poolSize: POOL_SIZE });
    admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.end();
    for (const db of databases) await db.drop();
    await pgbouncer?.stop();
  });

  /** Runs one task that fails at COMMIT on `url(db)`; returns its database and the app, still open. */
  async function failOneCommit(url: (db: TestDatabase) => string) {
    const db = await createTestDatabase();
    databases.push(db);
    const t = await createDelayTestApp(
      { ...db, url: url(db) },
      { concurrency: 1 },
      { modules: [{ module: CommitFailuresModule }] },
    );
    await t.query(`CREATE TABLE deferred_parent (id int PRIMARY KEY)`);
    await t.query(
      `CREATE TABLE deferred_child (parent_id int REFERENCES deferred_parent DEFERRABLE INITIALLY DEFERRED)`,
    );
    const task = await t.delay.schedule({ type: 'test.fails-at-commit', delay: 0 });
    await t.tester.runDue();
    // The failure is the task's: charged an attempt, retried with backoff.
    const failed = await t.delay.get({ id: task.id });
    expect(failed).toMatchObject({ state: 'pending', attempts: 1 });
    expect(failed!.lastError).toMatch(/deferred_child_parent_id_fkey/);
    expect(await t.query(`SELECT id FROM delay_attempt`)).toEqual([]);
    return { t, database: new URL(db.url).pathname.slice(1) };
  }

  it('directly: no note lock is left', async () => {
    const { t, database } = await failOneCommit(directUrl);
    try {
      await eventually(
        () => noteLocks(admin, database),
        (locks) => locks.length === 0,
        5 * SECOND,
      );
    } finally {
      await t.close();
    }
  });

  it('through PgBouncer: no note lock is left on a pooled session', async () => {
    const { t, database } = await failOneCommit((db) => throughPgbouncer(pgbouncer, db.url));
    try {
      await eventually(
        () => noteLocks(admin, database),
        (locks) => locks.length === 0,
        5 * SECOND,
      );
    } finally {
      await t.close();
    }
    expect(await noteLocks(admin, database)).toEqual([]);
  });
});
