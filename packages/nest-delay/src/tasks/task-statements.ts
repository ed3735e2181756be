import type { TaskId, TaskRef } from '../task.types.js';
import { PENDING, pendingIn } from './pending.js';
import type { Sql } from '../store/sql.js';
import type { CancelAction, MoveAction } from './task-transitions.js';
import type { TaskRow } from './task-row.js';

/** A task row and whether the action changed it (false: it was not in a state the action fits). */
export interface ActedRow extends TaskRow {
  changed: boolean;
}

/** $1 id or null, $2 key or null. By key: the pending task holding it, else its latest. */
const REF_MATCH = `(($1::bigint IS NOT NULL AND id = $1::bigint) OR ($1::bigint IS NULL AND key = $2::text))`;

function refParams(ref: TaskRef): [TaskId | null, string | null] {
  return 'id' in ref ? [ref.id, null] : [null, ref.key];
}

/**
 * Acts on the one task a ref names, in one statement: locks it, applies
 * `update` when `fits` holds, and returns the row either way with `changed`,
 * so "no such task" (no row) and "not in a state for that" (changed = false)
 * come back from the same round trip, with no window between a check and the
 * write. `target` returns the row as locked (after any transaction that held
 * it), not as the statement's snapshot saw it. `update` and `fits` use the
 * alias `t`; parameters from $3 on.
 */
function actOnTask(update: string, fits: string): string {
  return `
    WITH target AS (
      SELECT * FROM delayed_task WHERE ${REF_MATCH}
      ORDER BY (${PENDING}) DESC, id DESC LIMIT 1
      FOR UPDATE
    ), acted AS (
      UPDATE delayed_task t SET ${update}
      FROM target WHERE t.id = target.id AND ${fits}
      RETURNING t.*
    )
    SELECT *, true AS changed FROM acted
    UNION ALL
    SELECT *, false FROM target WHERE NOT EXISTS (SELECT 1 FROM acted)`;
}

/** The task with this id, or the pending (else latest) task with this key. */
export async function getTask(sql: Sql, ref: TaskRef): Promise<TaskRow | undefined> {
  const [row] = await sql.rows<TaskRow>(
    `SELECT * FROM delayed_task WHERE ${REF_MATCH} ORDER BY (${PENDING}) DESC, id DESC LIMIT 1`,
    refParams(ref),
  );
  return row;
}

/** cancel: a pending task stops being pending (see task-transitions.ts). */
export async function cancelTask(sql: Sql, ref: TaskRef, action: CancelAction, now: Date) {
  const [row] = await sql.rows<ActedRow>(
    actOnTask(`cancelled_at = $3, updated_at = $3, locked_by = $4::text`, pendingIn('t')),
    [...refParams(ref), now, action.lockedBy],
  );
  return row;
}

/** reschedule: a pending task moves to the action's due time and lease. */
export async function rescheduleTask(sql: Sql, ref: TaskRef, action: MoveAction, now: Date) {
  const [row] = await sql.rows<ActedRow>(
    actOnTask(`due_at = $3, locked_by = $4::text, updated_at = $5`, pendingIn('t')),
    [...refParams(ref), new Date(action.dueAtMs), action.lockedBy, now],
  );
  return row;
}

/** revive: a dead-lettered task back to pending, at the action's due time, with fresh attempts. */
export async function reviveTask(sql: Sql, ref: TaskRef, action: MoveAction, now: Date) {
  const [row] = await sql.rows<ActedRow>(
    actOnTask(
      `dead_at = NULL, attempts = 0, interrupted_at = NULL, due_at = $3, locked_by = $4::text,
       updated_at = $5`,
      `t.dead_at IS NOT NULL`,
    ),
    [...refParams(ref), new Date(action.dueAtMs), action.lockedBy, now],
  );
  return row;
}

/** Which tasks to list; every field narrows, none means all. */
export interface TaskFilter {
  state?: 'pending' | 'executed' | 'cancelled' | 'dead';
  type?: string;
  key?: string;
  keyPrefix?: string;
  /** Tasks whose payload contains this JSON (jsonb `@>`: a subset match). */
  payload?: unknown;
  dueFrom?: Date;
  dueBefore?: Date;
}

/** SQL for one state; the reading in task-row.ts's stateOf is its twin. */
const STATE_TEST = {
  pending: PENDING,
  executed: 'executed_at IS NOT NULL',
  cancelled: 'cancelled_at IS NOT NULL',
  dead: 'dead_at IS NOT NULL',
} as const;

/**
 * Tasks matching a filter, in due order, at most `limit`. Every filter is a
 * parameter whose null disables it, so the statement text is fixed but for
 * the state test, which is picked from a fixed set (never built from input).
 */
export function findTasks(sql: Sql, filter: TaskFilter, limit: number) {
  const state = filter.state ? STATE_TEST[filter.state] : 'true';
  return sql.rows<TaskRow>(
    `SELECT * FROM delayed_task
     WHERE ${state}
       AND ($1::text IS NULL OR type = $1)
       AND ($2::text IS NULL OR key = $2)
       AND ($3::text IS NULL OR starts_with(key, $3))
       AND ($4::jsonb IS NULL OR payload @> $4::jsonb)
       AND ($5::timestamptz IS NULL OR due_at >= $5)
       AND ($6::timestamptz IS NULL OR due_at < $6)
     ORDER BY due_at, id
     LIMIT $7`,
    [
      filter.type ?? null,
      filter.key ?? null,
      filter.keyPrefix ?? null,
      filter.payload === undefined ? null : JSON.stringify(filter.payload),
      filter.dueFrom ?? null,
      filter.dueBefore ?? null,
      limit,
    ],
  );
}
