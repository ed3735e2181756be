import type { Sql } from '../store/sql.js';
import { CANCELLED } from './action-statements.js';
import type { EntityActionResult } from '../task.types.js';
import type { EntityScope } from './entity-request.js';
import { PENDING, pendingIn, named, recordEvents, toTask, type TaskRow } from './task-row.js';
import type { CancelEntityAction, RescheduleEntityAction } from './task-transitions.js';

/**
 * The entity transitions, each on all of one entity's pending tasks in one
 * statement. They lock FOR UPDATE in id order and wait rather than SKIP
 * LOCKED, which would silently leave out a task a claim is running (and may
 * retry) or a loader is leasing; once granted, READ COMMITTED re-reads the
 * row, so a task completed meanwhile is left out. Id order queues two actions
 * on one entity instead of deadlocking; claims never wait for a row lock. The
 * wait is at most a handler's timeout and grace. `$1` entity, `$2` types or null.
 */
const TARGET = `
    target AS (
      SELECT id FROM delayed_task
      WHERE entity = $1 AND ${PENDING} AND ($2::text[] IS NULL OR type = ANY($2::text[]))
      ORDER BY id
      FOR UPDATE
    )`;

/** cancel-entity: the entity's pending tasks (of `scope.types`) cancelled; returns them, in id order. */
export function cancelEntityTasks(
  sql: Sql,
  scope: EntityScope,
  action: CancelEntityAction,
  now: Date,
): Promise<TaskRow[]> {
  return sql.rows<TaskRow>(
    `WITH ${TARGET}, acted AS (
       UPDATE delayed_task t SET ${CANCELLED}
       FROM target WHERE t.id = target.id AND ${pendingIn('t')}
       RETURNING t.*
     ), event AS (
       ${recordEvents('acted', { event: named('cancelled'), at: '$3', detail: `'with its entity'` })}
     )
     SELECT * FROM acted ORDER BY id`,
    [scope.entity, scope.types, now, action.lockedBy],
  );
}

/** A task's new due time: its own moved by $4 ms (at most to the year 9999), or $5. */
const NEW_DUE = `CASE WHEN $4::bigint IS NULL THEN $5::timestamptz
  ELSE least(t.due_at + $4::bigint * interval '1 millisecond', timestamptz '9999-12-31 23:59:59.999+00') END`;

/**
 * reschedule-entity: the entity's pending tasks (of `scope.types`) moved, by
 * a delta from each one's due time or to one time, each leased per the action; returns them moved, in id order.
 */
export function rescheduleEntityTasks(
  sql: Sql,
  scope: EntityScope,
  action: RescheduleEntityAction,
  now: Date,
): Promise<TaskRow[]> {
  return sql.rows<TaskRow>(
    // On t: the row version the lock was granted on, not the snapshot's.
    `WITH ${TARGET}, acted AS (
       UPDATE delayed_task t
       SET due_at = ${NEW_DUE},
           locked_by = CASE WHEN ${NEW_DUE} < $7 AND t.type = ANY($8::text[]) THEN $6::text END,
           updated_at = $3
       FROM target WHERE t.id = target.id AND ${pendingIn('t')}
       RETURNING t.*
     ), event AS (
       ${recordEvents('acted', { event: named('rescheduled'), at: '$3', dueAt: 'due_at', detail: `'with its entity'` })}
     )
     SELECT * FROM acted ORDER BY id`,
    [
      scope.entity,
      scope.types,
      now,
      action.byMs,
      action.toMs === null ? null : new Date(action.toMs),
      action.lockedBy,
      new Date(action.horizonMs),
      action.handledTypes,
    ],
  );
}

/** What an entity action changed, from the rows it returned (in id order). */
export function entityResult(entity: string, rows: TaskRow[]): EntityActionResult {
  const byType: Record<string, number> = {};
  for (const row of rows) byType[row.type] = (byType[row.type] ?? 0) + 1;
  return { entity, ids: rows.map((row) => row.id), byType, tasks: rows.map((row) => toTask(row)) };
}
