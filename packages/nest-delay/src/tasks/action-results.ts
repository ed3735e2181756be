import { TaskNotFoundError } from '../errors/task-not-found.error.js';
import { TaskStateError } from '../errors/task-state.error.js';
import type { EntityActionResult, TaskRef } from '../task.types.js';
import type { ActedRow } from './action-statements.js';
import { stateOf, toTask, type TaskRow } from './task-row.js';

// What DelayService's actions return, from the rows their statements returned.

/** The row an action changed; or why there is none, as the error to throw. */
export function actedRow(
  ref: TaskRef,
  row: ActedRow | undefined,
  action: 'cancel' | 'reschedule' | 'revive' | 'retry',
): ActedRow {
  if (!row) throw new TaskNotFoundError(ref);
  if (!row.changed) throw new TaskStateError(ref, stateOf(row), action);
  return row;
}

/** What an entity action changed, from the rows it returned (in id order). */
export function entityResult(entity: string, rows: TaskRow[]): EntityActionResult {
  const byType: Record<string, number> = {};
  for (const row of rows) byType[row.type] = (byType[row.type] ?? 0) + 1;
  return { entity, ids: rows.map((row) => row.id), byType, tasks: rows.map((row) => toTask(row)) };
}
