import { PENDING, type TaskRow } from '../tasks/task-row.js';
import type { Sql } from '../store/sql.js';
import type { TaskFilter } from '../tasks/task-statements.js';
import type { TaskId, TaskState } from '../task.types.js';

/** Where a page of tasks ended: the next page starts after (due time in µs, id). */
export interface TaskPosition {
  /** Microseconds since the epoch as digits: timestamptz keeps µs, a JS Date only ms. */
  dueUs: string;
  id: TaskId;
}

/** A task row with its exact due time, to carry on from it. */
interface ListedRow extends TaskRow {
  due_us: string;
}

/** SQL per state, and the order that walks the partial index each state has. */
const STATE_SCAN: Record<TaskState, { test: string; order: string }> = {
  pending: { test: PENDING, order: 'due_at, id' },
  executed: { test: 'executed_at IS NOT NULL', order: 'coalesce(executed_at, cancelled_at)' },
  cancelled: { test: 'cancelled_at IS NOT NULL', order: 'coalesce(executed_at, cancelled_at)' },
  dead: { test: 'dead_at IS NOT NULL', order: 'dead_at' },
};

export const TASK_STATES = Object.keys(STATE_SCAN) as TaskState[];

/**
 * One page of tasks matching a filter, in (due_at, id) order, after
 * `after` (keyset paging: stable under inserts, no offset to skip). The state
 * test is picked from a fixed set; everything else is a parameter whose null
 * disables it. A pending listing walks the pending due-order index; the
 * other states sort their matching rows (narrow by type, key or due range on
 * a table that keeps many finished tasks).
 */
export function listTasks(
  sql: Sql,
  filter: Omit<TaskFilter, 'payload'>,
  after: TaskPosition | null,
  limit: number,
) {
  const state = filter.state ? STATE_SCAN[filter.state].test : 'true';
  return sql.rows<ListedRow>(
    `SELECT *, (extract(epoch FROM due_at) * 1000000)::bigint::text AS due_us
     FROM delayed_task
     WHERE ${state}
       AND ($1::text IS NULL OR type = $1)
       AND ($2::text IS NULL OR key = $2)
       AND ($3::text IS NULL OR starts_with(key, $3))
       AND ($4::timestamptz IS NULL OR due_at >= $4)
       AND ($5::timestamptz IS NULL OR due_at < $5)
       AND ($6::bigint IS NULL
            OR (due_at, id) > ('epoch'::timestamptz + $6::bigint * interval '1 microsecond', $7::bigint))
       AND ($9::text IS NULL OR entity = $9)
     ORDER BY due_at, id
     LIMIT $8`,
    [
      filter.type ?? null,
      filter.key ?? null,
      filter.keyPrefix ?? null,
      filter.dueFrom ?? null,
      filter.dueBefore ?? null,
      after?.dueUs ?? null,
      after?.id ?? null,
      limit,
      filter.entity ?? null,
    ],
  );
}

/**
 * Tasks per state and type, reading at most `limit` rows of each state (each
 * through its partial index, in index order so the planner keeps to it): a
 * state with `limit` rows or more is reported as at least that many. Four
 * bounded scans however big the table, never a count(*) over all of it.
 */
export async function countTasks(sql: Sql, limit: number) {
  const scan = (state: TaskState) =>
    `SELECT '${state}'::text AS state, type FROM (
       SELECT type FROM delayed_task WHERE ${STATE_SCAN[state].test}
       ORDER BY ${STATE_SCAN[state].order} LIMIT $1
     ) ${state}_rows`;
  return sql.rows<{ state: TaskState; type: string; n: number }>(
    `SELECT state, type, count(*)::int AS n
     FROM (${TASK_STATES.map(scan).join(' UNION ALL ')}) counted
     GROUP BY state, type
     ORDER BY type, state`,
    [limit],
  );
}

/** A row of `delay_instance` with how many pending tasks it holds (at most `heldLimit` counted). */
export interface InstanceRow {
  id: string;
  started_at: Date;
  heartbeat_at: Date;
  lease_until: Date;
  db_heartbeat_at: Date | null;
  clock_correction_ms: number | null;
  held: number;
}

/** Every instance with a lease row, live or expired, by id; `held`: tasks leased to it, counted through the lease index. */
export function listInstances(sql: Sql, heldLimit: number) {
  return sql.rows<InstanceRow>(
    `SELECT i.id, i.started_at, i.heartbeat_at, i.lease_until, i.db_heartbeat_at, i.clock_correction_ms,
            (SELECT count(*)::int FROM (
               SELECT 1 FROM delayed_task t WHERE t.locked_by = i.id AND ${PENDING} LIMIT $1
             ) held_rows) AS held
     FROM delay_instance i
     ORDER BY i.id`,
    [heldLimit],
  );
}

/** One instance's lease row with its held count, or undefined when it has none (gone, or never was). */
export async function getInstance(sql: Sql, id: string, heldLimit: number) {
  const [row] = await sql.rows<InstanceRow>(
    `SELECT i.id, i.started_at, i.heartbeat_at, i.lease_until, i.db_heartbeat_at, i.clock_correction_ms,
            (SELECT count(*)::int FROM (
               SELECT 1 FROM delayed_task t WHERE t.locked_by = i.id AND ${PENDING} LIMIT $2
             ) held_rows) AS held
     FROM delay_instance i WHERE i.id = $1`,
    [id, heldLimit],
  );
  return row;
}
