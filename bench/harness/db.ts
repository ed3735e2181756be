/**
 * The bench's own view of Postgres: one throwaway database per system per run,
 * the `bench_order` table every system's effect writes to, and the query that
 * turns effect rows into lateness, duplicates and missing tasks.
 */
import pg from 'pg';
import type { TaskPlan } from './plan.js';

export const SERVER_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The one effect every system runs per task, in the handler. */
export const EFFECT_SQL = `UPDATE bench_order SET stars = 5, effects = effects + 1, effected_at = clock_timestamp() WHERE id = $1`;

/**
 * The effect of a recurring occurrence (`recurring` workload): one row per
 * run, with the occurrence as its handler was told it (schedule, scheduled
 * instant, the one before) and the task's due time, no unique constraint, so
 * a second run of an occurrence shows as a second row.
 */
export const OCCURRENCE_SQL = `INSERT INTO bench_occurrence (schedule_name, scheduled_at, previous_at, due_at, effected_at) VALUES ($1, $2, $3, $4, clock_timestamp())`;

export function databaseUrl(name: string): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function withClient<T>(
  url: string,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Drops (forcing out stray sessions) and creates `name`; returns its URL. */
export async function freshDatabase(name: string): Promise<string> {
  await withClient(SERVER_URL, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${quoteIdent(name)}`);
  });
  return databaseUrl(name);
}

export async function dropDatabase(name: string): Promise<void> {
  await withClient(SERVER_URL, (c) =>
    c.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`),
  );
}

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name))
    throw new Error(`database name ${JSON.stringify(name)} is not a plain identifier`);
  return `"${name}"`;
}

/** bench_order rows 1..plan.count, each with the due time its task is given. */
export async function seedOrders(client: pg.Client, plan: TaskPlan): Promise<void> {
  await client.query(`
    CREATE TABLE IF NOT EXISTS bench_order (
      id          bigint PRIMARY KEY,
      due_at      timestamptz NOT NULL,
      stars       smallint NULL,
      effects     integer NOT NULL DEFAULT 0,
      effected_at timestamptz NULL
    )`);
  await client.query(
    `INSERT INTO bench_order (id, due_at)
     SELECT g, to_timestamp(($2::float8 + (g - 1) * $3::float8) / 1000) FROM generate_series(1, $1::int) g`,
    [plan.count, plan.firstDueMs, plan.stepMs],
  );
  await client.query('ANALYZE bench_order');
}

export async function countEffected(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    `SELECT count(*) AS n FROM bench_order WHERE effects > 0`,
  );
  return Number(rows[0].n);
}

export interface Outcome {
  tasks: number;
  effected: number;
  duplicates: number;
  missing: number;
  firstEffectMs: number | null;
  lastEffectMs: number | null;
  /** Effect time − due time, ms, over tasks that ran. */
  lateness: { min: number; p50: number; p99: number; max: number } | null;
  /** Lateness at p0, p1 … p100, for the chart. */
  quantiles: number[];
}

const QUANTILES = Array.from({ length: 101 }, (_, i) => i / 100);

/** Reads the outcome of the tasks 1..count from bench_order: measured, not assumed. */
export async function readOutcome(client: pg.Client, count: number): Promise<Outcome> {
  const { rows } = await client.query(
    `SELECT count(*) FILTER (WHERE effects > 0)::int AS effected,
            count(*) FILTER (WHERE effects > 1)::int AS duplicates,
            count(*) FILTER (WHERE effects = 0)::int AS missing,
            extract(epoch FROM min(effected_at)) * 1000 AS first_ms,
            extract(epoch FROM max(effected_at)) * 1000 AS last_ms,
            percentile_cont($2::float8[]) WITHIN GROUP (ORDER BY extract(epoch FROM effected_at - due_at) * 1000)
              FILTER (WHERE effects > 0) AS q
     FROM bench_order WHERE id <= $1`,
    [count, QUANTILES],
  );
  const r = rows[0];
  const q = ((r.q as number[] | null) ?? []).map((v) => round(v, 1));
  return {
    tasks: count,
    effected: r.effected,
    duplicates: r.duplicates,
    missing: r.missing,
    firstEffectMs: r.first_ms === null ? null : Number(r.first_ms),
    lastEffectMs: r.last_ms === null ? null : Number(r.last_ms),
    lateness: q.length ? { min: q[0], p50: q[50], p99: q[99], max: q[100] } : null,
    quantiles: q,
  };
}

export async function serverVersion(): Promise<string> {
  return withClient(
    SERVER_URL,
    async (c) => (await c.query('SHOW server_version')).rows[0].server_version as string,
  );
}

export function round(value: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
