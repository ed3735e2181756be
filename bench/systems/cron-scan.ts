/**
 * The seeds' baseline: tasks are rows of bench_task; once a second (on the
 * second, like cron) a scan claims due rows 50 at a time with FOR UPDATE SKIP
 * LOCKED, runs the effect for each and marks them done in the same
 * transaction. One loop probes; a full batch brings up the other nine.
 */
import pg from 'pg';
import { EFFECT_SQL } from '../harness/db.js';
import type { SystemFactory } from './system.js';

const BATCH = 50;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS bench_task (
    id       bigserial PRIMARY KEY,
    order_id bigint NOT NULL,
    due_at   timestamptz NOT NULL,
    done     boolean NOT NULL DEFAULT false
  );
  CREATE INDEX IF NOT EXISTS bench_task_due_idx ON bench_task (due_at) WHERE NOT done`;

const CLAIM = `
  SELECT id, order_id FROM bench_task
  WHERE NOT done AND due_at <= now()
  ORDER BY due_at LIMIT ${BATCH}
  FOR UPDATE SKIP LOCKED`;

export const createCronScan: SystemFactory = (settings) => {
  const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: settings.poolSize });
  let timer: NodeJS.Timeout | undefined;
  let scanning: Promise<void> | undefined;
  let stopped = false;

  async function claimBatch(): Promise<number> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string; order_id: string }>(CLAIM);
      for (const row of rows) await client.query(EFFECT_SQL, [row.order_id]);
      if (rows.length > 0)
        await client.query('UPDATE bench_task SET done = true WHERE id = ANY($1::bigint[])', [
          rows.map((r) => r.id),
        ]);
      await client.query('COMMIT');
      return rows.length;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async function loop(): Promise<void> {
    while (!stopped && (await claimBatch()) === BATCH);
  }

  async function scan(): Promise<void> {
    if (stopped) return;
    if ((await claimBatch()) < BATCH) return;
    await Promise.all(Array.from({ length: settings.concurrency }, () => loop()));
  }

  function arm(): void {
    if (stopped) return;
    timer = setTimeout(
      () => {
        scanning ??= scan()
          .catch((error: unknown) => console.error(`cron-scan: ${String(error)}`))
          .finally(() => (scanning = undefined));
        arm();
      },
      1000 - (Date.now() % 1000),
    );
  }

  return {
    async start() {
      await pool.query(SCHEMA);
      arm();
    },
    async scheduleOne(task) {
      await pool.query('INSERT INTO bench_task (order_id, due_at) VALUES ($1, $2)', [
        task.orderId,
        new Date(task.dueAtMs),
      ]);
    },
    async scheduleMany(tasks) {
      await pool.query(
        'INSERT INTO bench_task (order_id, due_at) SELECT * FROM unnest($1::bigint[], $2::timestamptz[])',
        [tasks.map((t) => t.orderId), tasks.map((t) => new Date(t.dueAtMs))],
      );
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await scanning;
      await pool.end();
    },
  };
};
