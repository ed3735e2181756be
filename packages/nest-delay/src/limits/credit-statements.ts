import type { Sql } from '../store/sql.js';
import { declaredColumn } from './limit-statements.js';
import type { ResolvedLimit } from '../task-limit.js';

/**
 * The rate credits' ledger, `delay_limit_credit` (the protocol is in
 * limit-statements.ts, "Rate"): take, stamp, put back, reap and prune.
 */

/**
 * A credit's statements commit without waiting for the WAL flush (their
 * cost was one fsync each per start). Safe: the claim that follows a take
 * commits durably, which flushes the take before it; a stamp lost in a
 * server crash leaves its credit in flight, which is the safe side, until
 * its holder is taken over or restarts.
 */
const ASYNC_COMMIT = `async AS (SELECT set_config('synchronous_commit', 'off', true))`;

/** A credit taken for one start, and what to put back if the start does not happen. */
export interface TakenCredit {
  credit: number;
  previous: Date;
}

/** The outcome of asking for credits. */
export type CreditAnswer =
  /** Some taken (up to the number asked); with fewer, the earliest the next frees (null: unknown). */
  | { taken: TakenCredit[]; nextFreeMs: number | null; unlimited?: undefined }
  /** The type has no rate limit any more (changed at run time). */
  | { taken: []; nextFreeMs: null; unlimited: true };

/**
 * Takes up to `count` credits of `type`/`key` in flight for `holder`,
 * committed before the claim; credits are made on first use. `nowMs`: a
 * test clock's time; null, the database's.
 */
export async function takeCredits(
  sql: Sql,
  type: string,
  key: string,
  declared: ResolvedLimit['rate'],
  holder: string,
  nowMs: number | null,
  count: number,
): Promise<CreditAnswer> {
  for (let made = false; ; made = true) {
    const rows = await sql.rows<{
      starts: number | null;
      credit: number | null;
      previous_ms: number | null;
      existing: string;
      next_free_ms: number | null;
    }>(
      `WITH ${ASYNC_COMMIT}, rate AS (
         SELECT CASE WHEN l.overridden THEN l.rate_starts
                     ELSE ${declaredColumn('l', 'rate_starts', '$3::int')} END AS starts,
                CASE WHEN l.overridden THEN l.rate_per_ms
                     ELSE ${declaredColumn('l', 'rate_per_ms', '$4::bigint')} END AS per_ms,
                COALESCE(to_timestamp($6::float8 / 1000), clock_timestamp()) AS now
         FROM async LEFT JOIN delay_type_limit l ON l.type = $1
       ), free AS (
         SELECT c.credit, c.used_at FROM delay_limit_credit c, rate
         WHERE c.type = $1 AND c.key = $2 AND c.credit < rate.starts
           AND c.used_at <= rate.now - rate.per_ms * interval '1 millisecond'
         ORDER BY c.used_at LIMIT $7
         FOR UPDATE OF c SKIP LOCKED
       ), taken AS (
         UPDATE delay_limit_credit c SET used_at = 'infinity', holder = $5
         FROM free WHERE c.type = $1 AND c.key = $2 AND c.credit = free.credit
         RETURNING c.credit, free.used_at AS previous
       ), ledger AS (
         -- Once, not once per credit taken: read after the take's snapshot, the
         -- credits just taken still show their old stamps, so they are left out.
         SELECT count(c.credit) AS existing,
                (extract(epoch FROM min(c.used_at) FILTER (
                   WHERE c.used_at <> 'infinity' AND c.credit NOT IN (SELECT credit FROM taken)
                 )) * 1000)::float8 + min(rate.per_ms) AS next_free_ms
         FROM rate LEFT JOIN delay_limit_credit c
           ON c.type = $1 AND c.key = $2 AND c.credit < rate.starts
       )
       SELECT rate.starts, taken.credit,
              (extract(epoch FROM taken.previous) * 1000)::float8 AS previous_ms,
              ledger.existing, ledger.next_free_ms
       FROM rate CROSS JOIN ledger LEFT JOIN taken ON true`,
      [type, key, declared?.starts ?? null, declared?.perMs ?? null, holder, nowMs, count],
    );
    const first = rows[0];
    if (first.starts === null) return { taken: [], nextFreeMs: null, unlimited: true };
    const taken = rows
      .filter((row) => row.credit !== null)
      .map((row) => ({
        credit: row.credit!,
        // -infinity (a new credit) comes back as -Infinity: any time will do.
        previous: new Date(Number.isFinite(row.previous_ms) ? row.previous_ms! : 0),
      }));
    if (taken.length === 0 && Number(first.existing) < first.starts && !made) {
      await sql.rows(
        `INSERT INTO delay_limit_credit (type, key, credit, used_at)
         SELECT $1, $2, n, '-infinity' FROM generate_series(0, $3::int - 1) n
         ON CONFLICT DO NOTHING`,
        [type, key, first.starts],
      );
      continue;
    }
    return { taken, nextFreeMs: first.next_free_ms };
  }
}

/** A credit whose start has happened, to stamp. */
export interface StartedCredit {
  type: string;
  key: string;
  credit: number;
}

/** Stamps credits whose starts happened, on the database's clock (null `nowMs`): after each start. */
export async function stampCredits(
  sql: Sql,
  credits: StartedCredit[],
  holder: string,
  nowMs: number | null,
): Promise<void> {
  await sql.rows(
    `WITH ${ASYNC_COMMIT}
     UPDATE delay_limit_credit c
     SET used_at = COALESCE(to_timestamp($5::float8 / 1000), clock_timestamp()), holder = NULL
     FROM async, unnest($1::text[], $2::text[], $3::int[]) AS s(type, key, credit)
     WHERE c.type = s.type AND c.key = s.key AND c.credit = s.credit
       AND c.holder = $4 AND c.used_at = 'infinity'`,
    [
      credits.map((c) => c.type),
      credits.map((c) => c.key),
      credits.map((c) => c.credit),
      holder,
      nowMs,
    ],
  );
}

/** Puts a credit back as it was: its start did not happen. */
export async function returnCredit(
  sql: Sql,
  type: string,
  key: string,
  taken: TakenCredit,
  holder: string,
): Promise<void> {
  await sql.rows(
    `WITH ${ASYNC_COMMIT}
     UPDATE delay_limit_credit SET used_at = $4, holder = NULL
     FROM async WHERE type = $1 AND key = $2 AND credit = $3 AND holder = $5 AND used_at = 'infinity'`,
    [
      type,
      key,
      taken.credit,
      taken.previous.getTime() === 0 ? '-infinity' : taken.previous,
      holder,
    ],
  );
}

/**
 * Stamps the credits that `holders` (instances taken over, or this one
 * restarting under its old id) left in flight: whatever they started, they
 * started before now.
 */
export async function reapCredits(sql: Sql, holders: string[]): Promise<void> {
  await sql.rows(
    `UPDATE delay_limit_credit SET used_at = clock_timestamp(), holder = NULL
     WHERE holder = ANY($1::text[]) AND used_at = 'infinity'`,
    [holders],
  );
}

/** Deletes credits unused for a day (keys that went quiet): made again on their next start. */
export async function pruneCredits(sql: Sql, before: Date): Promise<void> {
  await sql.rows(`DELETE FROM delay_limit_credit WHERE used_at < $1 AND holder IS NULL`, [before]);
}
