/**
 * `npm run bench:storage [-- <tasks> <batch>]`: what the row that marks a
 * task executed costs, in three storage shapes, on a private cluster of its
 * own (bench/long/cluster.ts), one after the other:
 *
 * - `in-place` (this project): one row per task, `executed_at` set by an
 *   UPDATE in the claim, the table and its ten indexes as the app's
 *   migrations make them; executed rows are purged by a DELETE later (`retention`), and
 *   vacuum reclaims both.
 * - `append-only` (as awa and pgque keep their queues): the task row is never
 *   written again; the claim INSERTs the task's id into `done` (its primary
 *   key is the exactly-once guard), both tables partitioned by id range, and
 *   a range whose every task is done is dropped whole, with no vacuum.
 * - `delete` (as graphile-worker removes a finished job): the claim DELETEs
 *   the row and keeps nothing.
 *
 * Steady state, as the long run has it: `pending` tasks wait (100,000), and
 * each round schedules `batch` new ones and claims the `batch` oldest by id
 * (the ids a wheel fired) in a transaction with a one-row effect. Measured
 * per task over the rounds: the whole server's CPU (/proc: backends,
 * autovacuum, WAL writer), WAL bytes, wall time; at the end dead tuples and
 * bytes of the shape's tables and indexes; then what cleaning up costs
 * (in-place: the purge and a VACUUM; append-only: dropping the finished
 * ranges; delete: a VACUUM). Each shape runs twice: clean, and with a
 * transaction holding its snapshot through the rounds (the idle-in-tx
 * phase), released before the cleanup.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { migrate } from './harness/project-db.js';
import { startCluster, type Cluster } from './long/cluster.js';

const tasks = Number(process.argv[2] ?? 200_000);
const batch = Number(process.argv[3] ?? 7);
const PENDING = 100_000;
/** Ids per partition of the append-only shape. */
const RANGE = 50_000;
const RESULTS_DIR = fileURLToPath(new URL('../../../bench/results/', import.meta.url));

interface Shape {
  name: 'in-place' | 'append-only' | 'delete';
  /** Its tables, for dead tuples and sizes (partitions included). */
  tables: string[];
  /** Its tables, in the database at `url` (`c` is connected to it). */
  schema(c: pg.Client, url: string, lastId: number): Promise<void>;
  schedule(c: pg.Client, count: number): Promise<void>;
  /** Claims these ids; returns how many it claimed (the effect runs once per claimed id). */
  claim(c: pg.Client, ids: number[]): Promise<number>;
  cleanup(c: pg.Client): Promise<void>;
}

const TASK_COLUMNS = `
  type text NOT NULL, key text, entity text, payload jsonb, due_at timestamptz NOT NULL,
  max_attempts int NOT NULL DEFAULT 5, created_at timestamptz NOT NULL DEFAULT now()`;
const NEW_TASKS = (count: number) =>
  `SELECT 'bench.effect', jsonb_build_object('orderId', g), now() + interval '1 hour'
   FROM generate_series(1, ${count}) g`;

/** New tasks leased to the one instance, as scheduling through the API writes them. */
const scheduleLeased = (table: string) => async (c: pg.Client, count: number) => {
  await c.query(
    `INSERT INTO ${table} (type, payload, due_at, locked_by, created_at, updated_at)
     SELECT *, 'instance-1', now(), now() FROM (${NEW_TASKS(count)}) n`,
  );
};

const inPlace: Shape = {
  name: 'in-place',
  tables: ['delayed_task'],
  async schema(_c, url) {
    // The app's migrations: delayed_task exactly as an app has it, every index included.
    await migrate(url);
  },
  schedule: scheduleLeased('delayed_task'),
  async claim(c, ids) {
    const { rowCount } = await c.query(
      `UPDATE delayed_task SET executed_at = now(), attempts = attempts + 1, updated_at = now()
       WHERE id = ANY($1::bigint[]) AND executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL
       RETURNING id, payload`,
      [ids],
    );
    return rowCount ?? 0;
  },
  async cleanup(c) {
    await c.query(`DELETE FROM delayed_task WHERE executed_at IS NOT NULL`);
    await c.query(`VACUUM delayed_task`);
  },
};

/** Partitions of `task` and `done` by id range, made up front for the whole run. */
const appendOnly: Shape = {
  name: 'append-only',
  tables: ['task', 'done'],
  async schema(c, _url, lastId) {
    await c.query(`
      CREATE TABLE task (id bigint NOT NULL, ${TASK_COLUMNS}, PRIMARY KEY (id)) PARTITION BY RANGE (id);
      CREATE SEQUENCE task_id_seq;
      CREATE INDEX task_due_idx ON task (due_at, id);
      CREATE INDEX task_key_idx ON task (key, id) WHERE key IS NOT NULL;
      CREATE INDEX task_entity_idx ON task (entity, id) WHERE entity IS NOT NULL;
      CREATE TABLE done (task_id bigint NOT NULL, executed_at timestamptz NOT NULL, attempts int NOT NULL,
        PRIMARY KEY (task_id)) PARTITION BY RANGE (task_id);`);
    for (let from = 1; from <= lastId; from += RANGE) {
      await c.query(
        `CREATE TABLE task_${from} PARTITION OF task FOR VALUES FROM (${from}) TO (${from + RANGE});
         CREATE TABLE done_${from} PARTITION OF done FOR VALUES FROM (${from}) TO (${from + RANGE});`,
      );
    }
  },
  async schedule(c, count) {
    await c.query(
      `INSERT INTO task (id, type, payload, due_at) SELECT nextval('task_id_seq'), * FROM (${NEW_TASKS(count)}) n`,
    );
  },
  async claim(c, ids) {
    // The done row is the exactly-once guard: a second claim of an id conflicts and claims nothing.
    const { rowCount } = await c.query(
      `WITH claimed AS (
         INSERT INTO done (task_id, executed_at, attempts)
         SELECT id, now(), 1 FROM unnest($1::bigint[]) id
         ON CONFLICT DO NOTHING RETURNING task_id
       )
       SELECT t.id, t.payload FROM task t JOIN claimed ON t.id = claimed.task_id`,
      [ids],
    );
    return rowCount ?? 0;
  },
  async cleanup(c) {
    // A range whose every task is done goes whole: no row is deleted, nothing is vacuumed.
    const { rows } = await c.query<{ from: string }>(
      `SELECT substr(relname, 6) AS from FROM pg_class WHERE relname ~ '^task_[0-9]+$'`,
    );
    for (const { from } of rows) {
      const { rows: left } = await c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM task_${from} t WHERE NOT EXISTS (SELECT 1 FROM done d WHERE d.task_id = t.id)`,
      );
      if (left[0].n === 0) await c.query(`DROP TABLE task_${from}, done_${from}`);
    }
  },
};

const deleting: Shape = {
  name: 'delete',
  tables: ['queued_task'],
  async schema(c) {
    await c.query(`
      CREATE TABLE queued_task (id bigserial PRIMARY KEY, ${TASK_COLUMNS}, attempts int NOT NULL DEFAULT 0,
        locked_by text, updated_at timestamptz NOT NULL);
      CREATE INDEX queued_task_due_idx ON queued_task (due_at, id);
      CREATE INDEX queued_task_key_idx ON queued_task (key, id) WHERE key IS NOT NULL;
      CREATE INDEX queued_task_entity_idx ON queued_task (entity, id) WHERE entity IS NOT NULL;`);
  },
  schedule: scheduleLeased('queued_task'),
  async claim(c, ids) {
    const { rowCount } = await c.query(
      `DELETE FROM queued_task WHERE id = ANY($1::bigint[]) RETURNING id, payload`,
      [ids],
    );
    return rowCount ?? 0;
  },
  async cleanup(c) {
    await c.query(`VACUUM queued_task`);
  },
};

interface Figures {
  shape: Shape['name'];
  heldSnapshot: boolean;
  tasks: number;
  cpuUsPerTask: number;
  walBytesPerTask: number;
  wallUsPerTask: number;
  deadTuples: number;
  mb: number;
  cleanup: { cpuMs: number; walBytes: number; wallMs: number; mbAfter: number };
}

const walLsn = async (c: pg.Client) =>
  BigInt((await c.query(`SELECT pg_current_wal_lsn() - '0/0' AS b`)).rows[0].b as string);

async function shapeStats(c: pg.Client, shape: Shape) {
  const like = shape.tables
    .map((t) => `relname = '${t}' OR relname ~ '^${t}_[0-9]+$'`)
    .join(' OR ');
  await c.query('SELECT pg_stat_force_next_flush()');
  const dead = await c.query<{ n: string }>(
    `SELECT coalesce(sum(n_dead_tup), 0) AS n FROM pg_stat_user_tables WHERE ${like}`,
  );
  const bytes = await c.query<{ b: string }>(
    `SELECT coalesce(sum(pg_total_relation_size(oid)), 0) AS b FROM pg_class WHERE relkind = 'r' AND (${like})`,
  );
  return { deadTuples: Number(dead.rows[0].n), mb: Number(bytes.rows[0].b) / 1048576 };
}

async function run(cluster: Cluster, shape: Shape, heldSnapshot: boolean): Promise<Figures> {
  const serverCpuMs = () => {
    const ms = cluster.cpuMs();
    if (ms === null) throw new Error("the private cluster's CPU is not readable from /proc here");
    return ms;
  };
  const database = `shape_${shape.name.replace('-', '_')}_${heldSnapshot ? 'held' : 'clean'}`;
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  const c = new pg.Client({ connectionString: cluster.urlOf(database) });
  const holder = new pg.Client({ connectionString: cluster.urlOf(database) });
  await c.connect();
  await holder.connect();
  try {
    await shape.schema(c, cluster.urlOf(database), PENDING + tasks + batch);
    await c.query(
      `CREATE TABLE effect (order_id bigint NOT NULL, at timestamptz NOT NULL DEFAULT now())`,
    );
    await shape.schedule(c, PENDING);
    await c.query('VACUUM ANALYZE');
    if (heldSnapshot) {
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await holder.query('SELECT count(*) FROM effect');
    }
    let next = 1;
    const cpu0 = serverCpuMs();
    const wal0 = await walLsn(c);
    const t0 = performance.now();
    let claimed = 0;
    while (claimed < tasks) {
      await shape.schedule(c, batch);
      const ids = Array.from({ length: batch }, (_, i) => next + i);
      next += batch;
      await c.query('BEGIN');
      const n = await shape.claim(c, ids);
      await c.query(`INSERT INTO effect (order_id) SELECT unnest($1::bigint[])`, [ids.slice(0, n)]);
      await c.query('COMMIT');
      if (n !== batch) throw new Error(`${shape.name}: claimed ${n} of ${batch}`);
      claimed += n;
    }
    const wallMs = performance.now() - t0;
    const cpuMs = serverCpuMs() - cpu0;
    const walBytes = Number((await walLsn(c)) - wal0);
    const after = await shapeStats(c, shape);
    if (heldSnapshot) await holder.query('COMMIT');
    const cpu1 = serverCpuMs();
    const wal1 = await walLsn(c);
    const t1 = performance.now();
    await shape.cleanup(c);
    const cleanupWallMs = performance.now() - t1;
    const cleanupCpuMs = serverCpuMs() - cpu1;
    const cleanupWal = Number((await walLsn(c)) - wal1);
    const cleaned = await shapeStats(c, shape);
    return {
      shape: shape.name,
      heldSnapshot,
      tasks: claimed,
      cpuUsPerTask: Math.round((cpuMs * 1000) / claimed),
      walBytesPerTask: Math.round(walBytes / claimed),
      wallUsPerTask: Math.round((wallMs * 1000) / claimed),
      deadTuples: after.deadTuples,
      mb: Math.round(after.mb * 10) / 10,
      cleanup: {
        cpuMs: Math.round(cleanupCpuMs),
        walBytes: cleanupWal,
        wallMs: Math.round(cleanupWallMs),
        mbAfter: Math.round(cleaned.mb * 10) / 10,
      },
    };
  } finally {
    await holder.end().catch(() => undefined);
    await c.end();
  }
}

async function main(): Promise<void> {
  const cluster = await startCluster();
  const results: Figures[] = [];
  try {
    for (const heldSnapshot of [false, true])
      for (const shape of [inPlace, appendOnly, deleting]) {
        const f = await run(cluster, shape, heldSnapshot);
        results.push(f);
        console.error(`[storage] ${JSON.stringify(f)}`);
      }
  } finally {
    cluster.destroy();
  }
  console.log(
    `${tasks.toLocaleString('en-US')} tasks claimed ${batch} at a time, ${PENDING.toLocaleString('en-US')} pending throughout, one connection, a private cluster (fsync off)\n`,
  );
  console.log(
    '| shape | snapshot held | server CPU µs a task | WAL bytes a task | wall µs a task | dead tuples after | MB after | cleanup: CPU ms, WAL MB, MB left |',
  );
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const f of results)
    console.log(
      `| ${f.shape} | ${f.heldSnapshot ? 'yes' : 'no'} | ${f.cpuUsPerTask} | ${f.walBytesPerTask} | ${f.wallUsPerTask} | ${f.deadTuples.toLocaleString('en-US')} | ${f.mb} | ${f.cleanup.cpuMs}, ${(f.cleanup.walBytes / 1048576).toFixed(1)}, ${f.cleanup.mbAfter} |`,
    );
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = `storage-shapes-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
  writeFileSync(
    RESULTS_DIR + file,
    JSON.stringify({ tasks, batch, pending: PENDING, results }, null, 2),
  );
  console.log(`\nWrote bench/results/${file}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
