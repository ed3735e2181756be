import type { Sql } from '../store/sql.js';
import type { EntityActionResult } from '../task.types.js';
import type { EntityScope } from './entity-request.js';
import { PENDING, pendingIn } from './pending.js';
import { toTask, type TaskRow } from './task-row.js';
import { named, recordEvents } from './task-events.js';
import type { CancelEntityAction, RescheduleEntityAction } from './task-transitions.js';

/**
 * The statements of the entity transitions (decisions in task-transitions.ts):
 * each acts on all of one entity's pending tasks in one statement.
 *
 * Both lock their tasks FOR UPDATE in id order and wait, rather than SKIP
 * LOCKED: a row is locked by a claim running its handler, by a loader or a
 * takeover leasing it for a moment, or by another caller's transaction. With
 * SKIP LOCKED, a task whose attempt then fails (pending again, retrying) or
 * that was only being leased would be silently left out of an action meant
 * for all of the entity's tasks. Waiting, Postgres re-reads each row once
 * its lock is granted (READ COMMITTED): a task that completed meanwhile is no
 * longer pending and is left out, one pending again is acted on. Id order
 * makes two entity actions on one entity queue instead of deadlocking; a
 * claim never waits for a task's lock (SKIP LOCKED), so it cannot deadlock
 * with them. The wait is at most the running handler's timeout and grace.
 *
 * `scope` uses the entity index (delayed_task_entity_idx); `$1` entity, `$2`
 * types or null.
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
       UPDATE delayed_task t SET cancelled_at = $3, updated_at = $3, locked_by = $4::text
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
    // Computed on t, the row version the lock was granted on, not the snapshot's.
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
