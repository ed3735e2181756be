/**
 * `npm run bench:timeline-read [-- <tasks> <reads>]`: how long the timeline
 * of one entity takes to read (DelayAdmin.timeline's two statements,
 * `readTimeline`) when `delayed_task` holds `tasks` rows (1,000,000 by
 * default), four per entity, and `delay_task_event` three per task. A fresh
 * database migrated with `delayMigrations`, filled in bulk, analysed; then
 * `reads` timelines (500) of entities picked at random, one at a time, each
 * timed from the first statement sent to the last row back, and the plans
 * of both statements. Reported, never asserted (issue 30 asks for under 10 ms).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { delayMigrations } from 'nest-delay';
import { readTimeline } from 'nest-delay/internal';
import { dropDatabase, freshDatabase } from './harness/db.js';

const tasks = Number(process.argv[2] ?? 1_000_000);
const reads = Number(process.argv[3] ?? 500);
const PER_ENTITY = 4;
const DATABASE = 'bench_timeline_read';

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main(): Promise<void> {
  const url = await freshDatabase(DATABASE);
  const dataSource = new DataSource({ type: 'postgres', url, migrations: delayMigrations });
  await dataSource.initialize();
  await dataSource.runMigrations();
  await dataSource.destroy();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const sql = {
    rows: async <T>(text: string, params: unknown[]) =>
      (await pool.query(text, params)).rows as T[],
  };
  try {
    const entities = Math.ceil(tasks / PER_ENTITY);
    const fillStarted = performance.now();
    // Finished tasks mostly, as an order service's table is after a while; a few pending.
    await pool.query(
      `INSERT INTO delayed_task (type, payload, entity, due_at, executed_at, attempts, created_at, updated_at)
       SELECT 'order.task-' || (g % ${PER_ENTITY}), '{}'::jsonb, 'order:' || (g % $2),
              now() - (g % 86400) * interval '1 second',
              CASE WHEN g % 50 = 0 THEN NULL ELSE now() - (g % 86400) * interval '1 second' END,
              CASE WHEN g % 50 = 0 THEN 0 ELSE 1 END, now() - interval '2 days', now()
       FROM generate_series(1, $1::int) g`,
      [tasks, entities],
    );
    await pool.query(
      `INSERT INTO delay_task_event (task_id, entity, at, event, attempt, instance)
       SELECT t.id, t.entity, t.created_at + s.n * interval '1 second',
              (ARRAY['scheduled', 'started', 'retried'])[s.n], CASE WHEN s.n > 1 THEN 1 END,
              CASE WHEN s.n > 1 THEN 'bench-a' END
       FROM delayed_task t CROSS JOIN generate_series(1, 3) AS s(n)`,
    );
    await pool.query('ANALYZE delayed_task; ANALYZE delay_task_event');
    const fillMs = performance.now() - fillStarted;
    const [{ events }] = (await pool.query(`SELECT count(*)::int AS events FROM delay_task_event`))
      .rows;

    const entity = () => `order:${Math.floor(Math.random() * entities)}`;
    // Warm: the first reads bring the indexes' upper pages into the cache.
    for (let i = 0; i < 50; i++) await readTimeline(sql, entity());
    const times: number[] = [];
    let rowsSeen = 0;
    for (let i = 0; i < reads; i++) {
      const started = performance.now();
      const read = await readTimeline(sql, entity());
      times.push(performance.now() - started);
      rowsSeen += read.tasks.length + read.events.length;
    }
    times.sort((a, b) => a - b);
    const plans: string[] = [];
    for (const text of [
      `EXPLAIN SELECT * FROM delayed_task WHERE entity = $1 ORDER BY id`,
      `EXPLAIN SELECT * FROM delay_task_event WHERE entity = $1`,
    ])
      plans.push(
        (await pool.query(text, ['order:1'])).rows.map(
          (r: { 'QUERY PLAN': string }) => r['QUERY PLAN'],
        )[0],
      );
    const result = {
      at: new Date().toISOString(),
      tasks,
      entities,
      events,
      reads,
      rowsPerRead: Math.round((rowsSeen / reads) * 10) / 10,
      fillSeconds: Math.round(fillMs / 100) / 10,
      readMs: {
        p50: round(percentile(times, 50)),
        p95: round(percentile(times, 95)),
        p99: round(percentile(times, 99)),
        max: round(times[times.length - 1]),
      },
      plans,
    };
    const file = join('bench', 'results', `timeline-read-${result.at.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    console.log(
      `timeline read, ${tasks.toLocaleString('en')} tasks (${entities.toLocaleString('en')} entities), ` +
        `${Number(events).toLocaleString('en')} history rows, ${reads} reads: ` +
        `p50 ${result.readMs.p50} ms, p95 ${result.readMs.p95} ms, p99 ${result.readMs.p99} ms, max ${result.readMs.max} ms`,
    );
    for (const plan of plans) console.log(`  ${plan}`);
    console.log(`  ${file}`);
  } finally {
    await pool.end();
    await dropDatabase(DATABASE);
  }
}

const round = (ms: number) => Math.round(ms * 100) / 100;

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
