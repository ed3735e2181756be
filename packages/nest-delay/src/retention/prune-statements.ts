import type { Sql } from '../store/sql.js';

/** One key for every instance's pruner (two-int form, a class of its own): one prunes at a time. */
const PRUNE_LOCK = `${0x6e64_7072}, 0`; // 'ndpr'

/**
 * Deletes up to `limit` finished tasks of each kind (`deadBefore` null: dead
 * ones kept forever), only if this transaction wins the pruning lock (one
 * instance prunes at a time) and only rows nobody locks, so a prune never
 * waits on anything, nor makes anything wait. Returns how many went.
 */
export async function pruneTasks(
  sql: Sql,
  finishedBefore: Date | null,
  deadBefore: Date | null,
  limit: number,
): Promise<number> {
  const [row] = await sql.rows<{ deleted: number }>(
    `WITH lock AS (
       SELECT pg_try_advisory_xact_lock(${PRUNE_LOCK}) AS mine
     ), finished AS (
       SELECT id FROM delayed_task
       WHERE $1::timestamptz IS NOT NULL
         AND (executed_at IS NOT NULL OR cancelled_at IS NOT NULL)
         AND coalesce(executed_at, cancelled_at) < $1
         AND (SELECT mine FROM lock)
       LIMIT $3 FOR UPDATE SKIP LOCKED
     ), dead AS (
       SELECT id FROM delayed_task
       WHERE $2::timestamptz IS NOT NULL AND dead_at IS NOT NULL AND dead_at < $2
         AND (SELECT mine FROM lock)
       LIMIT $3 FOR UPDATE SKIP LOCKED
     ), gone AS (
       DELETE FROM delayed_task t
       WHERE t.id IN (SELECT id FROM finished UNION ALL SELECT id FROM dead)
       RETURNING t.id, t.entity
     ), history AS (
       -- A pruned task's history goes with it (the timeline says what retention forgets).
       DELETE FROM delay_task_event e USING gone
       WHERE gone.entity IS NOT NULL AND e.entity = gone.entity AND e.task_id = gone.id
     )
     SELECT count(*)::int AS deleted FROM gone`,
    [finishedBefore, deadBefore, limit],
  );
  return row.deleted;
}
