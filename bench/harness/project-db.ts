/**
 * For the workloads that prepare this project's table before it starts
 * (scale, recovery, retention): its migrations, and delayed_task rows written in bulk.
 */
import 'reflect-metadata';
import type pg from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options.js';

export const TASK_TYPE = 'bench.effect';
/** The task type of every schedule the `recurring` workload adds. */
export const RECURRING_TYPE = 'bench.recurring';

export async function migrate(url: string): Promise<void> {
  const dataSource = new DataSource(dataSourceOptions({ url, poolSize: 1 }));
  await dataSource.initialize();
  try {
    await dataSource.runMigrations({ transaction: 'each' });
  } finally {
    await dataSource.destroy();
  }
}

/** One unleased pending task per bench_order row, due when the row says. */
export async function insertTasksForOrders(client: pg.Client): Promise<void> {
  await client.query(
    `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
     SELECT $1, jsonb_build_object('orderId', id), due_at, now(), now() FROM bench_order ORDER BY id`,
    [TASK_TYPE],
  );
}

/** `count` pending tasks spread over the week after next week starts; they never fall due here. */
export async function insertFarTasks(client: pg.Client, count: number): Promise<void> {
  await client.query(
    `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
     SELECT $1, jsonb_build_object('orderId', 10000000 + g), now() + interval '7 days' + g * (interval '6 days' / $2::int), now(), now()
     FROM generate_series(1, $2::int) g`,
    [TASK_TYPE, count],
  );
}

export async function analyze(client: pg.Client): Promise<void> {
  await client.query('VACUUM ANALYZE delayed_task');
}

/**
 * `count` tasks that ran two to three days ago (one attempt, no key), as an
 * app's history looks a week before retention starts deleting: every one old
 * enough for any retention under two days to prune.
 */
export async function insertExecutedTasks(client: pg.Client, count: number): Promise<void> {
  await client.query(
    `INSERT INTO delayed_task (type, payload, due_at, executed_at, attempts, created_at, updated_at)
     SELECT $1, jsonb_build_object('orderId', 10000000 + g), d, d + interval '20 ms', 1, d - interval '1 hour', d + interval '20 ms'
     FROM (SELECT g, now() - interval '3 days' + g * (interval '1 day' / $2::int) AS d
           FROM generate_series(1, $2::int) g) s`,
    [TASK_TYPE, count],
  );
}
