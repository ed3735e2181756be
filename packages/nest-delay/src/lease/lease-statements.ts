import type { Sql } from '../store/sql.js';
import { PENDING, PENDING_BY_ID, pendingIn, type DueRow } from '../tasks/task-row.js';
import type { TaskId } from '../task.types.js';

/**
 * Renews this instance's lease and, in the same round trip, lists the
 * instances expired before `expiredBefore` and reads the database's clock
 * (the DatabaseClock's sample; recorded with the correction in use, for the
 * instance list).
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
 * Types among the oldest `sample` overdue unleased tasks (where a type nobody
 * takes piles up) that no live instance handles, with their counts. An
 * instance of an earlier version does not list its types (null): it counts as
 * running every type.
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

/** Takeover: releases the tasks of instances still expired before `expiredBefore`, deletes them, and marks the rate credits they left in flight used. */
export async function releaseExpiredInstances(
  sql: Sql,
  instanceIds: string[],
  expiredBefore: Date,
) {
  await sql.rows(
    `WITH expired AS (
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
       FROM expired WHERE c.holder = expired.id AND c.used_at = 'infinity'
     )
     UPDATE delayed_task t SET locked_by = NULL
     FROM expired WHERE t.locked_by = expired.id AND ${pendingIn('t')}`,
    [instanceIds, expiredBefore],
  );
}

/**
 * Releases tasks leased to instances with no live lease at `now` (missing:
 * say, a row deleted by a takeover). The holders come first, one descent of
 * the leases' index each, then only the missing ones' rows are read, in a
 * statement of its own: testing every leased row reads every instance's
 * whole window, and in one statement the planner chose to read the table.
 */
export async function releaseTasksOfMissingInstances(sql: Sql, now: Date) {
  const missing = await sql.rows<{ holder: string }>(
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
  if (missing.length === 0) return;
  // Their leases are tested again: one may have come back since (a restart under its id).
  await sql.rows(
    `UPDATE delayed_task t SET locked_by = NULL
     WHERE t.locked_by = ANY($1::text[]) AND ${pendingIn('t')}
       AND NOT EXISTS (SELECT 1 FROM delay_instance i WHERE i.id = t.locked_by AND i.lease_until >= $2)`,
    [missing.map((row) => row.holder), now],
  );
}

/** Releases everything leased to one instance (its restart under the same id). */
export async function releaseInstanceTasks(sql: Sql, instanceId: string) {
  await sql.rows(`UPDATE delayed_task SET locked_by = NULL WHERE locked_by = $1 AND ${PENDING}`, [
    instanceId,
  ]);
}

/**
 * At stop, before retireInstance: releases up to `limit` of the instance's
 * tasks, earliest due first, so a large hand-back is many short statements
 * others' loaders take from as it goes. SKIP LOCKED passes the claims a stop
 * cut off, whose locks outlive their connection a moment. Returns the count.
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
 * At stop: releases the rest of the instance's tasks and deletes its row in
 * one statement, so nothing is leased to it in between and then to nobody.
 * Rows cut-off claims still lock stay leased, and then the row stays too, for
 * a takeover when it expires. Returns how many it kept.
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
 * Leases the next page of unleased tasks of `types` due after `after` and
 * before the horizon, in due order; SKIP LOCKED splits the work between
 * instances loading at once. While a drain runs, `after` is when it began;
 * otherwise '-infinity', so a stray overdue task is leased, fires and starts a drain.
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

export async function databaseNowMs(sql: Sql): Promise<number> {
  const [row] = await sql.rows<{ now_ms: number }>(`SELECT ${DATABASE_NOW_MS} AS now_ms`, []);
  return row.now_ms;
}

/** A page of this instance's pending tasks due by `dueBy`, after the keyset `after`, by the leases' partial index: what StrandedSweep checks against memory. */
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

/** Of fired ids the claim did not take, those still pending: to wait again in the wheel. */
export function findPendingByIds(sql: Sql, ids: TaskId[]) {
  return sql.rows<DueRow & { locked_by: string | null }>(
    `SELECT id, due_at, locked_by FROM delayed_task WHERE id = ANY($1::bigint[]) AND ${PENDING_BY_ID}`,
    [ids],
  );
}

/**
 * The next page of overdue tasks that no instance holds, in due order after
 * the keyset `after` (null: from the first). A backlog is fed to the claim by
 * id like a burst, without first leasing every row into a wheel only to fire
 * it at once. Reads only: the claim decides who runs a task, so instances
 * reading the same page cannot run it twice.
 */
export function findOverdueUnleased(
  sql: Sql,
  now: Date,
  after: DueRow | null,
  limit: number,
  types: readonly string[],
) {
  return sql.rows<DueRow & { type: string }>(
    `SELECT id, due_at, type FROM delayed_task
     WHERE locked_by IS NULL AND ${PENDING} AND due_at <= $1
       AND (due_at, id) > ($2::timestamptz, $3::bigint) AND type = ANY($5::text[])
     ORDER BY due_at, id
     LIMIT $4`,
    [now, after?.due_at ?? '-infinity', after?.id ?? '0', limit, types],
  );
}
