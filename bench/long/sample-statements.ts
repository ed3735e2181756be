import type { SystemKind } from './options.js';

/** What the driver reads from Postgres while a system runs (cheap: statistics, no table scans but depth). */

/** Tasks due and not yet started, per system (instantaneous queue depth). */
export const DEPTH: Record<SystemKind, string> = {
  'nest-delay': `SELECT count(*)::int AS n FROM delayed_task
    WHERE executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL AND due_at <= now()`,
  'pg-boss': `SELECT count(*)::int AS n FROM pgboss.job
    WHERE name = 'long' AND state IN ('created', 'retry') AND start_after <= now()`,
  floor: `SELECT count(*)::int AS n FROM floor_task WHERE executed_at IS NULL AND due_at <= now()`,
};

export const HOT_TABLE: Record<SystemKind, string> = {
  'nest-delay': 'delayed_task',
  'pg-boss': 'pgboss.job',
  floor: 'floor_task',
};

/** Every table the system writes (all but the ledger and TypeORM's migration list). */
export const TABLES = `
  SELECT schemaname || '.' || relname AS name, n_live_tup::float8 AS live, n_dead_tup::float8 AS dead,
         pg_relation_size(relid)::float8 AS bytes,
         (autovacuum_count + vacuum_count)::int AS vacuums
  FROM pg_stat_user_tables WHERE relname NOT IN ('bench_ledger', 'migrations')`;

export const INDEXES = `
  SELECT schemaname || '.' || indexrelname AS name, pg_relation_size(indexrelid)::float8 AS bytes
  FROM pg_stat_user_indexes WHERE relname NOT IN ('bench_ledger', 'migrations')`;

/** Statements (pg_stat_statements, all users, this database) and transactions so far. */
export const STATEMENTS = `
  SELECT coalesce((SELECT sum(calls) FROM pg_stat_statements s WHERE s.dbid = d.datid), 0)::float8 AS statements,
         (xact_commit + xact_rollback)::float8 AS xacts
  FROM pg_stat_database d WHERE datname = $1`;

export const XACTS_ONLY = `SELECT 0::float8 AS statements, (xact_commit + xact_rollback)::float8 AS xacts
  FROM pg_stat_database WHERE datname = $1`;

/** The statements the system ran most, per effect: where per-task work could be cut. */
export const TOP_STATEMENTS = `
  SELECT s.calls::float8 AS calls, s.rows::float8 AS rows, round(s.total_exec_time::numeric, 1)::float8 AS ms,
         left(regexp_replace(s.query, '\\s+', ' ', 'g'), 160) AS query
  FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
  WHERE d.datname = $1 ORDER BY s.calls DESC LIMIT 15`;
