import { AHEAD_FACTOR, LATER_FACTOR } from './producer.js';

/**
 * The ledger: one row per effect, written by the handler (for this project in
 * the claim's transaction), with no unique constraint so a second effect of a
 * task shows as a second row. No index either: it would be per-task work the
 * systems do not do; the figures are read once, at the end.
 */
export const CREATE_LEDGER = `
  CREATE TABLE IF NOT EXISTS bench_ledger (
    task_id    bigint NOT NULL,
    due_at     timestamptz NOT NULL,
    started_at timestamptz NOT NULL,
    instance   smallint NOT NULL
  )`;

/** $1 task id, $2 due (epoch ms), $3 effect start (epoch ms), $4 instance. */
export const INSERT_LEDGER = `
  INSERT INTO bench_ledger (task_id, due_at, started_at, instance)
  VALUES ($1, to_timestamp($2::float8 / 1000), to_timestamp($3::float8 / 1000), $4)`;

/**
 * Per phase ($1 names, $2 starts, $3 ends, epoch ms): effects started in it
 * and their lateness (start − due, ms; early ones counted apart, never folded in).
 *
 * Then the same split by how a task was due, which the producer decides from
 * its id alone (producer.ts, $4 its share due now, $5 its ahead span in ms):
 * due at once (`q_now`: the scheduling call, the instance learning of the
 * task, its claim) and due at least a second after it was scheduled
 * (`q_ahead`: already in a wheel when due, so the firing and the claim
 * alone). One lateness figure hid which of the two paths a queue was on.
 */
export const PHASE_FIGURES = `
  SELECT p.name,
         count(l.task_id)::int AS effects,
         count(l.task_id) FILTER (WHERE l.started_at < l.due_at)::int AS early,
         percentile_cont(ARRAY[0.5, 0.99, 0.9999]) WITHIN GROUP (ORDER BY x.lateness) AS q,
         max(x.lateness) AS max,
         percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY x.lateness)
           FILTER (WHERE NOT x.later) AS q_now,
         percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY x.lateness)
           FILTER (WHERE x.later AND (l.task_id * ${AHEAD_FACTOR}) % $5::bigint >= 1000) AS q_ahead
  FROM unnest($1::text[], $2::float8[], $3::float8[]) AS p(name, from_ms, to_ms)
  LEFT JOIN bench_ledger l
    ON l.started_at >= to_timestamp(p.from_ms / 1000) AND l.started_at < to_timestamp(p.to_ms / 1000)
  LEFT JOIN LATERAL (
    SELECT greatest(0, extract(epoch FROM l.started_at - l.due_at) * 1000) AS lateness,
           (l.task_id * ${LATER_FACTOR}) % 1000 >= $4::float8 * 1000 AS later
  ) x ON l.task_id IS NOT NULL
  GROUP BY p.name`;

/**
 * The check over the offered ids, ranges [$1[i], $2[i]] (one per producer),
 * and the pending ids 1..$4: tasks with no effect, with more than one,
 * effects before their due time, and effects of ids nobody offered. $3 lists
 * the ids whose scheduling call failed (it may or may not have committed):
 * none or one effect each is right for them.
 */
export const LEDGER_CHECK = `
  WITH per_task AS (
    SELECT task_id, count(*) AS n, bool_or(started_at < due_at) AS early
    FROM bench_ledger GROUP BY task_id
  ), ranges AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS r(first, last)
  )
  SELECT
    (SELECT count(*) FROM per_task WHERE n > 1)::int AS duplicates,
    (SELECT count(*) FROM per_task WHERE early)::int AS early,
    (SELECT count(*) FROM per_task t WHERE t.task_id > $4
       AND NOT EXISTS (SELECT 1 FROM ranges r WHERE t.task_id BETWEEN r.first AND r.last))::int AS unknown,
    (SELECT count(*) FROM ranges r, generate_series(r.first, r.last) g
       WHERE NOT EXISTS (SELECT 1 FROM per_task t WHERE t.task_id = g)
         AND g <> ALL($3::bigint[]))::int AS missing`;

/** Effects of the pending tasks (ids 1..$1): all are due after the run, so any is early. */
export const PENDING_FIRED = `SELECT count(*)::int AS n FROM bench_ledger WHERE task_id <= $1`;

/** Offered tasks (ids above the pending ones, $1) with an effect, for the drain at the end. */
export const EFFECTED_OFFERED = `SELECT count(DISTINCT task_id)::int AS n FROM bench_ledger WHERE task_id > $1`;

/**
 * Built once the run is over, so the systems never paid for it: the series'
 * windows below are then index range counts instead of a scan each.
 */
export const INDEX_STARTED_AT = `CREATE INDEX IF NOT EXISTS bench_ledger_started_at ON bench_ledger (started_at)`;

/** Effects started in each window [$1[i], $2[i]) (epoch ms), in the windows' order. */
export const EFFECTS_IN = `
  SELECT (SELECT count(*) FROM bench_ledger
          WHERE started_at >= to_timestamp(w.from_ms / 1000) AND started_at < to_timestamp(w.to_ms / 1000))::int AS n
  FROM unnest($1::float8[], $2::float8[]) WITH ORDINALITY AS w(from_ms, to_ms, i)
  ORDER BY w.i`;

/**
 * Lateness of the offered tasks' effects (ids ≥ $2) per 10 s of effect start
 * since $1 (epoch ms); `t` is the window's start in seconds since $1.
 */
export const LATENESS_WINDOWS = `
  SELECT t, effects, q[1] AS p50, q[2] AS p99, max
  FROM (
    SELECT floor((extract(epoch FROM started_at) * 1000 - $1::float8) / 10000)::int * 10 AS t,
           count(*)::int AS effects,
           percentile_cont(ARRAY[0.5, 0.99]) WITHIN GROUP (
             ORDER BY greatest(0, extract(epoch FROM started_at - due_at) * 1000)) AS q,
           max(greatest(0, extract(epoch FROM started_at - due_at) * 1000))::float8 AS max
    FROM bench_ledger
    WHERE started_at >= to_timestamp($1::float8 / 1000) AND task_id >= $2
    GROUP BY 1
  ) w
  ORDER BY t`;
