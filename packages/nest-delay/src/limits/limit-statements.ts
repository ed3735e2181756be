import type { ResolvedLimit } from '../task-limit.js';
import type { ScriptStatements } from '../store/claim-connection.js';
import type { Sql } from '../store/sql.js';
import { PENDING, PENDING_BY_ID, type DueRow } from '../tasks/task-row.js';
import type { TaskId } from '../task.types.js';
import type { GateClaim } from './gate-line.types.js';

/**
 * The SQL of shared limits (docs/limits.md).
 *
 * Concurrency: a seat is a transaction-scoped advisory lock, (LIMIT_LOCK_CLASS,
 * hash of type, key and seat number), taken by the claim of the first task
 * it lets run (lineCheckInScript) and released by that claim's COMMIT or ROLLBACK,
 * or by its session's end when the process dies. The handlers run inside the
 * claim, so they run only while its seat is held. Nothing to clean up, and
 * nothing survives a transaction on a pooled server session. Two keys whose
 * hashes collide share seats: they may wait for each other, never exceed.
 *
 * Pause: `pause()` commits its row while holding the type's pause lock
 * (PAUSE_LOCK_CLASS, hash of type) exclusively; each claim of a gate takes
 * it shared (a try: refused while a pause holds or waits for it) and keeps
 * it to its transaction's end, and reads the row after taking it. So pause()
 * returns once the gate's claims of the type running then have ended, and
 * none starts a handler of it afterwards. Before it waits for that lock, a
 * pause takes PAUSE_WAIT_CLASS, which a running claim looks at before each
 * start (pauseWaitingProbe): it stops there, so a pause waits for the
 * handlers running when it came, not for the rest of their claims.
 *
 * Rate: `delay_limit_credit` holds `starts` rows per type and key. A start
 * takes a credit last used at least `per` ago, marking it in flight
 * (`used_at` infinity) in a statement of its own, committed before the
 * claim; once the handler has started, the credit is stamped with the
 * database's clock. The stamp comes after the start and the check before the
 * next one, both on the database's clock, so two starts on one credit are at
 * least `per` apart whatever the instances' clocks, the round trips or a
 * rolled-back claim do: at most `starts` starts in any window of `per`. A
 * credit in flight whose holder died is stamped when that instance's lease
 * is taken over (reapCredits), which is later than any start it made.
 */
export const LIMIT_LOCK_CLASS = 0x6e64_6c6d; // 'ndlm'
export const PAUSE_LOCK_CLASS = 0x6e64_6c70; // 'ndlp'
/** Held by a pause() from before it waits for the pause lock: a running gate claim sees it waiting. */
export const PAUSE_WAIT_CLASS = 0x6e64_6c77; // 'ndlw'

/** SQL for a seat's lock key: type, key and seat number hashed together. */
export function seatLockKey(type: string, key: string, seat: string): string {
  return `hashtext(${type} || E'\\x1f' || ${key} || E'\\x1f' || ${seat}::text)`;
}

/** A type's limits as stored: declared in code (by the last instance to boot), and set at run time. */
export interface TypeLimitRow {
  type: string;
  paused_at: Date | null;
  overridden: boolean;
  concurrency: number | null;
  rate_starts: number | null;
  rate_per_ms: string | null;
  updated_at: Date;
  declared_concurrency: number | null;
  declared_rate_starts: number | null;
  declared_rate_per_ms: string | null;
  declared_per_key: boolean;
  /** When an instance last wrote its declared limits (null: none has, since version 11). */
  declared_at: Date | null;
  declared_by: string | null;
}

/** Every type's limits (few rows). */
export function readTypeLimits(sql: Sql): Promise<TypeLimitRow[]> {
  return sql.rows<TypeLimitRow>(
    `SELECT type, paused_at, overridden, concurrency, rate_starts, rate_per_ms, updated_at,
            declared_concurrency, declared_rate_starts, declared_rate_per_ms, declared_per_key,
            declared_at, declared_by
     FROM delay_type_limit ORDER BY type`,
    [],
  );
}

/**
 * SQL choosing, for a row `l` of delay_type_limit (possibly missing), the
 * declared value in force: the stored declaration when an instance has
 * written one, else `fallback` (the claiming instance's code).
 */
export function declaredColumn(l: string, column: string, fallback: string): string {
  return `CASE WHEN ${l}.declared_at IS NOT NULL THEN ${l}.declared_${column} ELSE ${fallback} END`;
}

/**
 * Pauses a type (`paused` true) or resumes it; a pause keeps the time it
 * began. A pause takes the type's pause lock exclusively first (see above):
 * it commits, and returns, once the gate's claims of the type have ended.
 */
export async function setPaused(sql: Sql, type: string, paused: boolean, now: Date): Promise<void> {
  await sql.rows(
    `WITH waiting AS (
       SELECT CASE WHEN $2::boolean THEN pg_advisory_xact_lock(${PAUSE_WAIT_CLASS}, hashtext($1)) END
     ), pause_lock AS (
       SELECT CASE WHEN $2::boolean THEN pg_advisory_xact_lock(${PAUSE_LOCK_CLASS}, hashtext($1)) END
       FROM waiting
     )
     INSERT INTO delay_type_limit (type, paused_at, updated_at)
     SELECT $1, CASE WHEN $2::boolean THEN $3::timestamptz END, $3 FROM pause_lock
     ON CONFLICT (type) DO UPDATE
       SET paused_at = CASE WHEN $2::boolean THEN COALESCE(delay_type_limit.paused_at, $3) END,
           updated_at = $3`,
    [type, paused, now],
  );
}

/**
 * True when no pause() of the type waits: asked before each start after a
 * claim's first. The session lock is let go in the same statement, so a
 * pooler in transaction mode keeps nothing.
 */
export function pauseWaitingProbe(typeLiteral: string): string {
  const key = `${PAUSE_WAIT_CLASS}, hashtext(${typeLiteral})`;
  return `SELECT CASE WHEN pg_try_advisory_lock_shared(${key})
    THEN pg_advisory_unlock_shared(${key}) ELSE false END AS go_on`;
}

/** What one handler here declares, as declareLimits writes it. */
export interface LimitDeclaration {
  type: string;
  limit: ResolvedLimit;
  perKey: boolean;
}

/**
 * Writes what this instance's handlers declare, at boot: the last instance
 * to boot states the declared limits for every instance (each claim reads
 * them from here), so two versions of the code in a rolling deploy apply
 * one set of limits. A type limited in code gets its row (a claim reads it
 * with FOR KEY SHARE, which sees a pause committed since the claim's
 * snapshot only if the row existed then: with the row there from boot, a
 * first pause is seen too); a type declared without limits here clears the
 * declared limits of a row that has them. Run-time settings and pauses are
 * left as they are, and so are types without a handler here (another
 * service's).
 */
export async function declareLimits(
  sql: Sql,
  declarations: LimitDeclaration[],
  instanceId: string,
  now: Date,
): Promise<void> {
  if (declarations.length === 0) return;
  await sql.rows(
    `INSERT INTO delay_type_limit (type, updated_at, declared_concurrency, declared_rate_starts,
                                   declared_rate_per_ms, declared_per_key, declared_at, declared_by)
     SELECT d.type, $6, d.concurrency, d.starts, d.per_ms, d.per_key, $6, $7
     FROM unnest($1::text[], $2::int[], $3::int[], $4::bigint[], $5::boolean[])
          AS d(type, concurrency, starts, per_ms, per_key)
     WHERE d.concurrency IS NOT NULL OR d.starts IS NOT NULL
        OR EXISTS (SELECT 1 FROM delay_type_limit l WHERE l.type = d.type)
     ON CONFLICT (type) DO UPDATE
       SET declared_concurrency = EXCLUDED.declared_concurrency,
           declared_rate_starts = EXCLUDED.declared_rate_starts,
           declared_rate_per_ms = EXCLUDED.declared_rate_per_ms,
           declared_per_key = EXCLUDED.declared_per_key,
           declared_at = EXCLUDED.declared_at,
           declared_by = EXCLUDED.declared_by`,
    [
      declarations.map((d) => d.type),
      declarations.map((d) => d.limit.concurrency),
      declarations.map((d) => d.limit.rate?.starts ?? null),
      declarations.map((d) => d.limit.rate?.perMs ?? null),
      declarations.map((d) => d.perKey),
      now,
      instanceId,
    ],
  );
}

/** Replaces the declared limits of a type with `limit` (null: back to the declared). */
export async function writeOverride(
  sql: Sql,
  type: string,
  limit: ResolvedLimit | null,
  now: Date,
): Promise<void> {
  await sql.rows(
    `INSERT INTO delay_type_limit (type, overridden, concurrency, rate_starts, rate_per_ms, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (type) DO UPDATE
       SET overridden = EXCLUDED.overridden, concurrency = EXCLUDED.concurrency,
           rate_starts = EXCLUDED.rate_starts, rate_per_ms = EXCLUDED.rate_per_ms,
           updated_at = EXCLUDED.updated_at`,
    [
      type,
      limit !== null,
      limit?.concurrency ?? null,
      limit?.rate?.starts ?? null,
      limit?.rate?.perMs ?? null,
      now,
    ],
  );
}

/**
 * Pending tasks of these types due by `now`, by type, each counted up to
 * `cap` (a backlog of millions is "at least cap", not a million-row count
 * on every read): what waits behind their limits or pauses, cluster-wide.
 */
export async function countWaiting(
  sql: Sql,
  types: string[],
  now: Date,
  cap: number,
): Promise<Map<string, number>> {
  if (types.length === 0) return new Map();
  const rows = await sql.rows<{ type: string; waiting: string }>(
    `SELECT types.type, (
       SELECT count(*) FROM (
         SELECT 1 FROM delayed_task t
         WHERE t.type = types.type AND t.executed_at IS NULL AND t.cancelled_at IS NULL
           AND t.dead_at IS NULL AND t.due_at <= $2
         LIMIT $3
       ) capped
     ) AS waiting
     FROM unnest($1::text[]) AS types(type)`,
    [types, now, cap],
  );
  return new Map(rows.map((row) => [row.type, Number(row.waiting)]));
}

/** A task the gate shed, read back: its payload only when its type's limit has a key. */
export interface WaitingRow extends DueRow {
  payload: unknown;
}

/**
 * The next page, after `after`, of one type's due tasks leased here or to
 * no one: what the gate shed, read back (LimitGate.refill).
 */
export function findWaiting(
  sql: Sql,
  type: string,
  instanceId: string,
  now: Date,
  after: DueRow | null,
  limit: number,
  withPayload: boolean,
): Promise<WaitingRow[]> {
  return sql.rows<WaitingRow>(
    `SELECT id, due_at, ${withPayload ? 'payload' : 'NULL AS payload'} FROM delayed_task
     WHERE type = $1 AND (locked_by IS NULL OR locked_by = $2) AND ${PENDING} AND due_at <= $3
       AND (due_at, id) > ($4::timestamptz, $5::bigint)
     ORDER BY due_at, id
     LIMIT $6`,
    [type, instanceId, now, after?.due_at ?? '-infinity', after?.id ?? '0', limit],
  );
}

/** The fired tasks among `ids` still pending, with the payload of `keyed` types: a plain read. */
export function findFired(sql: Sql, ids: TaskId[], keyed: readonly string[]) {
  return sql.rows<DueRow & { type: string; payload: unknown }>(
    `SELECT id, type, due_at, CASE WHEN type = ANY($2::text[]) THEN payload END AS payload
     FROM delayed_task t WHERE id = ANY($1::bigint[]) AND ${PENDING_BY_ID}`,
    [ids, keyed],
  );
}

/**
 * A gate's claim's line check, sent with its BEGIN (values quoted in): null
 * when the line may claim, else why not. In order, each only if the one
 * before passed: the pause lock, shared (a pause committing holds it: refused);
 * the type's row FOR KEY SHARE (its latest committed version, blocking no
 * update); the rate `credits` still `holder`'s, with its lease row locked FOR
 * KEY SHARE (a takeover, which reaps credits, skips it); a seat. All held to
 * the claim's end, so its claim statement (claimTasks, cleared for the type)
 * and every start are under them. `declared`: for a type with no stored row.
 */
export function lineCheckInScript(
  script: ScriptStatements,
  { line, declared }: GateClaim,
  holder: string,
  credits: number[] | undefined,
): string {
  const int = (n: number | null) => (n === null ? 'NULL::int' : `${Math.trunc(n)}::int`);
  return script.statement('nest_delay_line_check', LINE_CHECK, [
    script.literal(line.type),
    script.literal(line.key),
    int(declared.concurrency),
    credits ? `ARRAY[${credits.map(int).join(', ')}]::int[]` : 'NULL::int[]',
    script.literal(holder),
    declared.rate !== null ? 'true' : 'false',
  ]);
}

/** $1–$6: the type, the key, the declared concurrency, the credits taken (null: none), their holder, paced. */
const LINE_CHECK = `WITH pause_lock AS (
       SELECT pg_try_advisory_xact_lock_shared(${PAUSE_LOCK_CLASS}, hashtext($1)) AS ok
     ), limits AS (
       SELECT l.paused_at, l.overridden, l.concurrency, l.rate_starts,
              l.declared_at, l.declared_concurrency, l.declared_rate_starts
       FROM delay_type_limit l, pause_lock
       WHERE l.type = $1 AND pause_lock.ok
       FOR KEY SHARE OF l
     ), gate AS (
       SELECT NOT (SELECT ok FROM pause_lock) OR l.paused_at IS NOT NULL AS paused,
              -- Set at run time, else declared (stored at boot, else this instance's code).
              CASE WHEN l.overridden THEN l.concurrency
                   ELSE ${declaredColumn('l', 'concurrency', '$3::int')} END AS seats,
              CASE WHEN l.overridden THEN l.rate_starts IS NOT NULL
                   WHEN l.declared_at IS NOT NULL THEN l.declared_rate_starts IS NOT NULL
                   ELSE $6::boolean END AS paced
       FROM (SELECT 1) one LEFT JOIN limits l ON true
     )
     SELECT CASE
       WHEN paused THEN 'paused'
       WHEN $4::int[] IS NOT NULL AND NOT (cardinality($4::int[]) = (
         SELECT count(*) FROM delay_limit_credit c
         WHERE c.type = $1 AND c.key = $2 AND c.credit = ANY($4::int[]) AND c.holder = $5
           AND c.used_at = 'infinity'
       ) AND EXISTS (SELECT 1 FROM delay_instance i WHERE i.id = $5 FOR KEY SHARE OF i))
         THEN 'unpaced'
       WHEN $4::int[] IS NULL AND paced IS TRUE THEN 'unpaced'
       WHEN seats IS NOT NULL AND NOT EXISTS (
         SELECT 1 FROM generate_series(0, seats - 1) s
         WHERE pg_try_advisory_xact_lock(${LIMIT_LOCK_CLASS}, ${seatLockKey('$1', '$2', 's')})
       ) THEN 'busy'
     END AS refused
     FROM gate`;
