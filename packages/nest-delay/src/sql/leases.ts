import { PENDING, pendingIn } from './pending.js';

/**
 * Renews this instance's lease and, in the same round trip, lists instances
 * whose lease ran out (they died or stalled): their tasks are up for takeover.
 * Also returns the database's clock, to keep an eye on the app's offset.
 * $1 instance id, $2 now, $3 lease until.
 */
export const HEARTBEAT = `
  WITH beat AS (
    INSERT INTO delay_instance (id, started_at, heartbeat_at, lease_until)
    VALUES ($1, $2, $2, $3)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, lease_until = EXCLUDED.lease_until
    RETURNING id
  )
  SELECT now() AS db_now,
         ARRAY(SELECT id FROM delay_instance WHERE lease_until < $2 AND id <> $1) AS expired`;

/** Frees the tasks of instances whose lease expired and forgets them. $1 instance ids, $2 now. */
export const RELEASE_EXPIRED_INSTANCES = `
  WITH dead AS (
    DELETE FROM delay_instance WHERE id = ANY($1::text[]) AND lease_until < $2 RETURNING id
  )
  UPDATE delayed_task t SET locked_by = NULL, locked_at = NULL
  FROM dead WHERE t.locked_by = dead.id AND ${pendingIn('t')}`;

/** At start: frees tasks held by instances that have no live lease at all. $1 now. */
export const RELEASE_ORPHANED_TASKS = `
  UPDATE delayed_task t SET locked_by = NULL, locked_at = NULL
  WHERE t.locked_by IS NOT NULL AND ${pendingIn('t')}
    AND NOT EXISTS (SELECT 1 FROM delay_instance i WHERE i.id = t.locked_by AND i.lease_until >= $1)`;

/** Frees everything one instance holds (its restart under the same id). $1 instance id. */
export const RELEASE_INSTANCE_TASKS = `
  UPDATE delayed_task SET locked_by = NULL, locked_at = NULL
  WHERE locked_by = $1 AND ${PENDING}`;

/**
 * At shutdown: forgets the instance and frees its tasks in one statement, so
 * nothing can be leased to it in between and then be held by nobody. $1 instance id.
 */
export const RETIRE_INSTANCE = `
  WITH gone AS (DELETE FROM delay_instance WHERE id = $1)
  UPDATE delayed_task SET locked_by = NULL, locked_at = NULL
  WHERE locked_by = $1 AND ${PENDING}`;

/**
 * Leases the next page of unheld tasks due after $5 and before the window's
 * horizon, in due order. SKIP LOCKED lets instances loading at once split the
 * work. While a backlog drain runs, $5 is when it began (the drain runs what
 * was due by then itself); otherwise '-infinity', so a stray overdue task
 * still gets leased, fires at once and starts a drain for any others.
 * $1 instance id, $2 horizon, $3 page size, $4 now, $5 due after.
 */
export const LEASE_DUE_TASKS = `
  WITH picked AS (
    SELECT id FROM delayed_task
    WHERE locked_by IS NULL AND ${PENDING} AND due_at > $5::timestamptz AND due_at < $2
    ORDER BY due_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
  )
  UPDATE delayed_task t SET locked_by = $1, locked_at = $4
  FROM picked WHERE t.id = picked.id
  RETURNING t.id, t.due_at`;

/** The database's clock, to measure how far the app's clock is from it. */
export const DATABASE_NOW = `SELECT now() AS now`;
