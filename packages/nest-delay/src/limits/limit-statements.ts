import type { ResolvedLimit } from '../task-limit.js';
import type { ScriptStatements } from '../store/claim-connection.js';
import { GATE_CLAIM_MAX_MS } from '../context/tuning.js';
import type { Sql } from '../store/sql.js';
import { PENDING, PENDING_BY_ID, type ClaimRow, type DueRow } from '../tasks/task-row.js';
import type { TaskId } from '../task.types.js';
import type { GateClaim, LineRefusal } from './gate-line.types.js';

/**
 * The SQL of shared limits on a limited task's way (docs/limits.md), and a
 * gate's claim's run of its line (LineRun, at the end). The statements of
 * run-time changes (pause, override) and counts are DelayLimits' own.
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
 * it to its transaction's end, and reads the row in a later statement, whose
 * snapshot is taken after the lock: in the same statement, a pause that
 * committed between the snapshot and the try went unseen (a KEY SHARE row
 * lock returns the old version when only other columns changed). So pause()
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
 * one set of limits. A type limited in code gets its row, which a gate's
 * claim locks FOR KEY SHARE (a row a pause inserts later is one no claim
 * could have locked); a type declared without limits here clears the
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
 * before passed: the pause lock, shared (a pause committing holds it:
 * refused), in a statement of its own before the others, which then see
 * every pause committed before it; the type's row FOR KEY SHARE (blocking
 * no update); the rate `credits` still `holder`'s, with its lease row locked FOR
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
  const pauseLock = `${PAUSE_LOCK_CLASS}, hashtext(${script.literal(line.type)})`;
  const takePauseLock = `SELECT set_config('nest_delay.pause_free',
    pg_try_advisory_xact_lock_shared(${pauseLock})::text, true)`;
  return `${takePauseLock}; ${script.statement('nest_delay_line_check', LINE_CHECK, [
    script.literal(line.type),
    script.literal(line.key),
    int(declared.concurrency),
    credits ? `ARRAY[${credits.map(int).join(', ')}]::int[]` : 'NULL::int[]',
    script.literal(holder),
    declared.rate !== null ? 'true' : 'false',
  ])}`;
}

/** $1–$6: the type, the key, the declared concurrency, the credits taken (null: none), their holder, paced. */
const LINE_CHECK = `WITH pause_lock AS (
       SELECT current_setting('nest_delay.pause_free')::boolean AS ok
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

// ---------------------------------------------------------------- a gate's claim, its run of its line

/** The line a gate's claim is for, and what its line check (sent with the BEGIN) answered. */
export interface LineGating {
  type: string;
  /** Null: the line may claim (lineCheckInScript). */
  refused: LineRefusal | null;
}

/**
 * A gate's claim of one line's tasks, started one at a time in due order
 * under the line check's locks (held to the claim's end). It stops when a
 * pause() waits (pauseWaitingProbe, before each start after the first) or
 * after GATE_CLAIM_MAX_MS, and puts back the tasks not started: a pause
 * waits for one handler, a transaction outlives a second by one handler's run.
 */
export class LineRun {
  private index = 0;
  private readonly beganMs = performance.now();
  /** The savepoint step's question before each start after the first: may it go on (no pause waiting)? */
  readonly probe: string;

  constructor(
    private readonly sql: Sql,
    /** Claimed, in due order. */
    private readonly claimed: ClaimRow[],
    private readonly claimedAt: Date,
    typeLiteral: string,
  ) {
    this.probe = pauseWaitingProbe(typeLiteral);
  }

  /** The next task to start, or undefined once the claim has run its time. */
  next(): ClaimRow | undefined {
    if (this.index > 0 && performance.now() - this.beganMs > GATE_CLAIM_MAX_MS) return undefined;
    return this.claimed[this.index++];
  }

  /** The savepoint step's probe said stop before `row` started: it and those after it go back. */
  stopBefore(row: ClaimRow): void {
    this.index = this.claimed.indexOf(row);
  }

  /** The tasks that started. */
  get started(): ClaimRow[] {
    return this.claimed.slice(0, this.index);
  }

  /** Puts back the tasks not started, in the claim's transaction (outside any savepoint); returns their ids. */
  async putBack(): Promise<TaskId[]> {
    const unstarted = this.claimed.slice(this.index).map((row) => row.id);
    if (unstarted.length > 0) await returnUnstarted(this.sql, unstarted, this.claimedAt);
    return unstarted;
  }
}

/**
 * Undoes the claim of tasks a gate's claim took but did not start (it ran
 * its time, or a pause is waiting): pending again, their attempt not
 * counted, and the attempt the claim recorded on their timeline gone, in the
 * claim's own transaction, so what commits is as if they had never been
 * claimed (but for `updated_at`). Only a batch stops short, and a
 * batch claims no task flagged as cut off, so there is no flag to restore.
 */
export async function returnUnstarted(sql: Sql, ids: TaskId[], claimedAt: Date): Promise<void> {
  await sql.rows(
    `WITH unstarted AS (
       UPDATE delayed_task SET executed_at = NULL, attempts = attempts - 1
       WHERE id = ANY($1::bigint[]) AND executed_at = $2
       RETURNING id, entity, attempts + 1 AS attempt
     )
     -- [timeline] the claim recorded their attempts as started: they were not.
     -- By entity and task, as the history's index is.
     DELETE FROM delay_task_event e USING unstarted u
     WHERE e.entity = u.entity AND e.task_id = u.id
       AND e.event = 'started' AND e.attempt = u.attempt AND e.at = $2`,
    [ids, claimedAt],
  );
}

/** Deletes a claim's own note in its transaction, when it claims nothing (a refused gate's claim). */
export async function deleteNote(sql: Sql, noteId: string): Promise<void> {
  await sql.rows(`DELETE FROM delay_attempt WHERE id = $1`, [noteId]);
}
