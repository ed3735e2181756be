/**
 * How big this project's table is on disk and how many of its tuples are
 * live or dead, read from Postgres' own accounting (no table scan, so a
 * sample every few seconds costs the system under test nothing it would notice).
 */
import type pg from 'pg';

export interface RelationSample {
  /** Seconds since the measurement started. */
  atSeconds: number;
  /** pg_total_relation_size: heap, TOAST, free space and visibility maps, and every index. */
  totalBytes: number;
  /** pg_relation_size of the heap alone. */
  tableBytes: number;
  /** pg_relation_size of each index, by name. */
  indexBytes: Record<string, number>;
  liveTuples: number;
  deadTuples: number;
  /** Cumulative rows deleted (pg_stat_user_tables.n_tup_del; stats are flushed about once a second). */
  deletedTuples: number;
  autovacuums: number;
  /** Manual vacuums (the bench's stand-in for autovacuum runs them; absent in runs before it was sampled). */
  vacuums?: number;
  /** delay_attempt, total: a row per claim in flight, deleted at its commit. */
  attemptTotalBytes: number;
}

export async function sampleRelation(
  client: pg.Client,
  startedMs: number,
  table = 'delayed_task',
): Promise<RelationSample> {
  const { rows } = await client.query(
    `SELECT pg_total_relation_size(relid)::float8 AS total,
            pg_relation_size(relid)::float8 AS heap,
            n_live_tup::float8 AS live, n_dead_tup::float8 AS dead, n_tup_del::float8 AS deleted,
            autovacuum_count::float8 AS autovacuums, vacuum_count::float8 AS vacuums,
            coalesce(pg_total_relation_size(to_regclass('delay_attempt')), 0)::float8 AS attempts
     FROM pg_stat_user_tables WHERE relname = $1`,
    [table],
  );
  if (rows.length === 0) throw new Error(`table ${table} not found in pg_stat_user_tables`);
  const indexes = await client.query(
    `SELECT indexrelname AS name, pg_relation_size(indexrelid)::float8 AS bytes
     FROM pg_stat_user_indexes WHERE relname = $1 ORDER BY indexrelname`,
    [table],
  );
  const r = rows[0];
  return {
    atSeconds: Math.round((Date.now() - startedMs) / 1000),
    totalBytes: r.total,
    tableBytes: r.heap,
    indexBytes: Object.fromEntries(
      indexes.rows.map((i: { name: string; bytes: number }) => [i.name, i.bytes]),
    ),
    liveTuples: r.live,
    deadTuples: r.dead,
    deletedTuples: r.deleted,
    autovacuums: r.autovacuums,
    vacuums: r.vacuums,
    attemptTotalBytes: r.attempts,
  };
}

/** Cumulative rows deleted from `table`, as the statistics have it right now. */
export async function deletedSoFar(client: pg.Client, table = 'delayed_task'): Promise<number> {
  // Each sample its own snapshot of the statistics, not the transaction's cached one.
  await client.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await client.query(
    `SELECT n_tup_del::float8 AS deleted FROM pg_stat_user_tables WHERE relname = $1`,
    [table],
  );
  return rows.length ? Number(rows[0].deleted) : 0;
}
