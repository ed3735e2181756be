import { PENDING, pendingIn } from '../tasks/pending.js';
import type { Sql } from '../store/sql.js';
import type { DueRow } from '../tasks/task-row.js';

/**
 * Renews this instance's lease and, in the same round trip, lists instances
 * whose lease ran out before `expiredBefore` (they died or stalled): their
 * tasks are up for takeover.
 * Also returns the database's clock (epoch ms, to the microsecond), the
 * sample DatabaseClock corrects this instance's clock with, and records it
 * beside the instance's (`db_heartbeat_at`) with the correction in use, for
 * others to read.
 */
export async function heartbeat(
  sql: Sql,
  instanceId: string,
  now: Date,
  leaseUntil: Date,
  expiredBefore: Date,
  clockCorrectionMs: number | null,
  taskTypes: readonly string[],
) {
  const [row] = await sql.rows<{ expired: string[]; db_now_ms: number }>(
    `WITH beat AS (
       INSERT INTO delay_instance (id, started_at, heartbeat_at, lease_until, db_heartbeat_at,
                                   clock_correction_ms, task_types)
       VALUES ($1, $2, $2, $3, now(), $5::float8, $6::text[])
       ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at,
         lease_until = EXCLUDED.lease_until, db_heartbeat_at = EXCLUDED.db_heartbeat_at,
         clock_correction_ms = EXCLUDED.clock_correction_ms, task_types = EXCLUDED.task_types
       RETURNING id
     )
     SELECT ${DATABASE_NOW_MS} AS db_now_ms,
            ARRAY(SELECT id FROM delay_instance WHERE lease_until < $4 AND id <> $1) AS expired`,
    [instanceId, now, leaseUntil, expiredBefore, clockCorrectionMs, taskTypes],
  );
  return { expired: row.expired, databaseMs: row.db_now_ms };
}

/**
 * Types of overdue, unleased tasks that no live instance has a handler for
 * (see WindowPolicy.handles): they wait until one starts. Looked for among
 * the oldest `sample` such tasks, where a type nobody takes piles up, with
 * how many of them each has. An instance of an earlier release does not say
 * its types (null): counted as running every type.
 */
export function findUnhandledTypes(sql: Sql, dueBefore: Date, sample: number) {
  return sql.rows<{ type: string; waiting: number }>(
    `SELECT type, count(*)::int AS waiting
     FROM (SELECT type FROM delayed_task
           WHERE locked_by IS NULL AND ${PENDING} AND due_at < $1
           ORDER BY due_at LIMIT $2) oldest
     WHERE NOT EXISTS (SELECT 1 FROM delay_instance i
                       WHERE i.task_types IS NULL OR oldest.type = ANY(i.task_types))
     GROUP BY type ORDER BY type`,
    [dueBefore, sample],
  );
}

/** The database's clock as epoch milliseconds, read when evaluated (not at transaction start). */
const DATABASE_NOW_MS = `(extract(epoch FROM clock_timestamp()) * 1000)::float8`;

/**
 * Frees the tasks of instances whose lease expired (still, before
 * `expiredBefore`) and forgets them, stamping the rate credits they held.
 */
export async function releaseExpiredInstances(
  sql: Sql,
  instanceIds: string[],
  expiredBefore: Date,
) {
  await sql.rows(
    `WITH dead AS (
       -- SKIP LOCKED: an instance whose gate claim still runs keeps its row
       -- locked (FOR KEY SHARE, claimTasks) and is taken over at a later
       -- heartbeat, once that claim has ended: its credits are reaped after
       -- its last start, never under a handler about to start on them.
       DELETE FROM delay_instance WHERE id IN (
         SELECT id FROM delay_instance WHERE id = ANY($1::text[]) AND lease_until < $2
         FOR UPDATE SKIP LOCKED
       ) RETURNING id
     ), credits AS (
       -- Rate credits they left in flight: whatever they started, they started before now.
       UPDATE delay_limit_credit c SET used_at = clock_timestamp(), holder = NULL
       FROM dead WHERE c.holder = dead.id AND c.used_at = 'infinity'
     )
     UPDATE delayed_task t SET locked_by = NULL
     FROM dead WHERE t.locked_by = dead.id AND ${pendingIn('t')}`,
    [instanceIds, expiredBefore],
  );
}

/**
 * Frees tasks leased to instances that have no lease live at `now` (say, a
 * row deleted by a takeover). The holders come first, one descent of the
 * leases' index each (`holders` steps from one instance id to the next),
 * and only the rows of those without a live lease are then read, in a
 * statement of their own that runs only when there are some: testing every
 * leased row read every instance's whole window, 1.6 s of the server a call
 * at 2,000 tasks/s (the long-horizon bench), and in one statement the
 * planner, guessing a hundred holders, still chose to read the table.
 */
export async function releaseOrphans(sql: Sql, now: Date) {
  const orphaned = await sql.rows<{ holder: string }>(
    `WITH RECURSIVE holders AS (
       (SELECT locked_by FROM delayed_task WHERE locked_by IS NOT NULL AND ${PENDING}
        ORDER BY locked_by LIMIT 1)
       UNION ALL
       SELECT (SELECT t.locked_by FROM delayed_task t
               WHERE t.locked_by > h.locked_by AND ${pendingIn('t')}
               ORDER BY t.locked_by LIMIT 1)
       FROM holders h WHERE h.locked_by IS NOT NULL
     )
     SELECT h.locked_by AS holder FROM holders h
     WHERE h.locked_by IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM delay_instance i WHERE i.id = h.locked_by AND i.lease_until >= $1)`,
    [now],
  );
  if (orphaned.length === 0) return;
  // Their leases are tested again: one may have come back since (a restart under its id).
  await sql.rows(
    `UPDATE delayed_task t SET locked_by = NULL
     WHERE t.locked_by = ANY($1::text[]) AND ${pendingIn('t')}
       AND NOT EXISTS (SELECT 1 FROM delay_instance i WHERE i.id = t.locked_by AND i.lease_until >= $2)`,
    [orphaned.map((row) => row.holder), now],
  );
}

/** Frees everything one instance holds (its restart under the same id). */
export async function releaseInstanceTasks(sql: Sql, instanceId: string) {
  await sql.rows(`UPDATE delayed_task SET locked_by = NULL WHERE locked_by = $1 AND ${PENDING}`, [
    instanceId,
  ]);
}

/**
 * At shutdown, before retireInstance: frees up to `limit` of the instance's
 * tasks, earliest due first, in a transaction of their own, so a large hand-back
 * is many short statements that the other instances' loaders can take from
 * as it goes. Rows another transaction holds are skipped (SKIP LOCKED): the
 * claims a stop cut off, whose locks outlive their connection a moment.
 * Returns how many it freed.
 */
export async function handBackTasks(sql: Sql, instanceId: string, limit: number) {
  const rows = await sql.rows<{ id: string }>(
    `UPDATE delayed_task t SET locked_by = NULL
     FROM (SELECT id FROM delayed_task WHERE locked_by = $1 AND ${PENDING}
           ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED) s
     WHERE t.id = s.id
     RETURNING t.id`,
    [instanceId, limit],
  );
  return rows.length;
}

/**
 * At shutdown: frees what is left of the instance's tasks and forgets the
 * instance in one statement, so nothing can be leased to it in between and
 * then be leased to nobody. Rows another transaction still holds (claims
 * the stop cut off) stay leased, and then the instance is not forgotten: its
 * lease expires and another instance takes them over, while everything else
 * was handed back at once. Returns how many it kept.
 */
export async function retireInstance(sql: Sql, instanceId: string): Promise<number> {
  const [row] = await sql.rows<{ kept: number }>(
    `WITH freed AS (
       UPDATE delayed_task t SET locked_by = NULL
       FROM (SELECT id FROM delayed_task WHERE locked_by = $1 AND ${PENDING}
             FOR UPDATE SKIP LOCKED) s
       WHERE t.id = s.id
       RETURNING t.id
     ), held AS (
       -- The statement's snapshot: the rows freed above still count here.
       SELECT count(*) - (SELECT count(*) FROM freed) AS kept
       FROM delayed_task WHERE locked_by = $1 AND ${PENDING}
     ), gone AS (
       DELETE FROM delay_instance WHERE id = $1 AND (SELECT kept FROM held) = 0
     )
     SELECT kept::int FROM held`,
    [instanceId],
  );
  return row.kept;
}

/**
 * Leases the next page of unleased tasks due after `after` and before the
 * window's horizon, in due order. SKIP LOCKED lets instances loading at once
 * split the work. While a backlog drain runs, `after` is when it began (the
 * drain runs what was due by then itself); otherwise '-infinity', so a stray
 * overdue task still gets leased, fires at once and starts a drain for any others.
 * Only tasks of `types`, those this instance has handlers for.
 */
export function leaseDueTasks(
  sql: Sql,
  instanceId: string,
  horizon: Date,
  after: Date | '-infinity',
  limit: number,
  types: readonly string[],
) {
  return sql.rows<DueRow & { type: string }>(
    `WITH picked AS (
       SELECT id FROM delayed_task
       WHERE locked_by IS NULL AND ${PENDING} AND due_at > $3::timestamptz AND due_at < $2
         AND type = ANY($5::text[])
       ORDER BY due_at, id
       LIMIT $4
       FOR UPDATE SKIP LOCKED
     )
     UPDATE delayed_task t SET locked_by = $1
     FROM picked WHERE t.id = picked.id
     RETURNING t.id, t.due_at, t.type`,
    [instanceId, horizon, after, limit, types],
  );
}

/** The database's clock (epoch ms), to measure how far the app's clock is from it. */
export async function databaseNowMs(sql: Sql): Promise<number> {
  const [row] = await sql.rows<{ now_ms: number }>(`SELECT ${DATABASE_NOW_MS} AS now_ms`, []);
  return row.now_ms;
}

/**
 * A page of this instance's pending tasks due by `dueBy`, in due order after
 * the keyset `after`: what the safety net (StrandedSweep) checks against
 * memory. By the leases' partial index: only this instance's pending rows.
 */
export function findLeasedOverdue(
  sql: Sql,
  instanceId: string,
  dueBy: Date,
  after: DueRow | null,
  limit: number,
) {
  return sql.rows<DueRow & { type: string }>(
    `SELECT id, due_at, type FROM delayed_task
     WHERE locked_by = $1 AND ${PENDING} AND due_at <= $2
       AND (due_at, id) > ($3::timestamptz, $4::bigint)
     ORDER BY due_at, id
     LIMIT $5`,
    [instanceId, dueBy, after?.due_at ?? '-infinity', after?.id ?? '0', limit],
  );
}
