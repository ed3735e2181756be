import type { Charge, Fate } from './task-transitions.js';
import { PENDING, pendingIn } from './pending.js';
import type { Sql } from '../store/sql.js';

/**
 * The statements that write a claimed attempt's fate, inside the claim
 * transaction (after the task's savepoint was rolled back, if it failed).
 * `complete` writes nothing: the claim's `executed_at` commits with the
 * handler's effects. Returns a promise only when there is something to write,
 * so the common case costs no microtask.
 */
export function writeFate(sql: Sql, fate: Fate, now: Date): Promise<unknown> | undefined {
  const { id } = fate.row;
  switch (fate.transition) {
    case 'complete':
      return undefined;
    case 'retry':
      return sql.rows(
        `UPDATE delayed_task
         SET executed_at = NULL, last_error = $2, due_at = $3, locked_by = $4::text,
             interrupted_at = NULL, updated_at = $5
         WHERE id = $1`,
        [id, fate.error, new Date(fate.dueAtMs), fate.lockedBy, now],
      );
    case 'snooze':
      return sql.rows(
        `UPDATE delayed_task
         SET executed_at = NULL, attempts = $2, due_at = $3, locked_by = $4::text,
             interrupted_at = NULL, updated_at = $5
         WHERE id = $1`,
        [id, fate.attempts, new Date(fate.dueAtMs), fate.lockedBy, now],
      );
    case 'skip':
      return sql.rows(
        `UPDATE delayed_task
         SET executed_at = NULL, cancelled_at = $3, last_error = $2, locked_by = NULL, updated_at = $3
         WHERE id = $1`,
        [id, fate.reason, now],
      );
    case 'discard':
    case 'exhaust':
      // Kept, marked and visible, never deleted: for inspection and a revive.
      return sql.rows(
        `UPDATE delayed_task
         SET executed_at = NULL, dead_at = $3, last_error = $2, locked_by = NULL, updated_at = $3
         WHERE id = $1`,
        [id, fate.reason, now],
      );
  }
}

/**
 * Charges cut-off attempts (see `charge` in task-transitions.ts). Applied
 * only if the row still has the attempts the charge was decided from, and is
 * pending: a task that ran elsewhere meanwhile is not charged. `noteId`: the
 * attempt note this charge accounts for, deleted in the same statement if
 * the charge applied (a claim cut off after a handler's timeout; kept
 * otherwise, a dead note that the task's next claim charges); notes found
 * dead by a claim are trimmed by takeDeadNotes instead. Returns whether it
 * was charged.
 */
export async function writeCharge(
  sql: Sql,
  change: Charge,
  now: Date,
  noteId: string | null,
): Promise<boolean> {
  const { row } = change;
  const dead = change.transition === 'exhaust';
  const rows = await sql.rows(
    `WITH charged AS (
       UPDATE delayed_task t
       SET attempts = $3, interrupted_at = $7, updated_at = $7, last_error = $4,
           dead_at = CASE WHEN $5 THEN $7::timestamptz END,
           due_at = $6, locked_by = $9::text
       WHERE t.id = $1 AND t.attempts = $2 AND ${pendingIn('t')}
       RETURNING t.id
     ), note AS (
       DELETE FROM delay_attempt WHERE id = $8::bigint AND EXISTS (SELECT 1 FROM charged)
     )
     SELECT id FROM charged`,
    [
      row.id,
      row.attempts,
      change.attempts,
      dead ? change.reason : change.error,
      dead,
      dead ? row.due_at : new Date(change.dueAtMs),
      now,
      noteId,
      dead ? null : change.lockedBy,
    ],
  );
  return rows.length > 0;
}

/**
 * The **unplan** transition (see task-transitions.ts): the occurrences of
 * schedules `names` planned ahead, pending, not due by `now` and never
 * started, deleted in one statement. The caller holds the schedules' rows
 * (FOR UPDATE, in its transaction) and runs this as a statement of its own,
 * so its snapshot includes whatever a planner committed before the lock was
 * granted. A wheel still holding one finds no row when it fires, and lets it
 * go. Returns each schedule's earliest occurrence unplanned.
 */
export function unplanOccurrences(sql: Sql, names: string[], now: Date) {
  return sql.rows<{ schedule_name: string; first_at: Date }>(
    `WITH unplanned AS (
       DELETE FROM delayed_task
       WHERE schedule_name = ANY($1::text[]) AND ${PENDING} AND due_at > $2 AND attempts = 0
       RETURNING schedule_name, occurrence_at
     )
     SELECT schedule_name, min(occurrence_at) AS first_at FROM unplanned GROUP BY schedule_name`,
    [names, now],
  );
}

/**
 * The **withdraw** transition, as a part of the claim statement: every row
 * of CTE `due` with a `withdrawn` reason (see schedules/occurrence-verdict.ts)
 * is cancelled, not run, that reason its `last_error`. `now` is the claim
 * statement's parameter for the time.
 */
export const withdrawOccurrences = (due: string, now: string) => `UPDATE delayed_task t
       SET cancelled_at = ${now}, last_error = d.withdrawn, locked_by = NULL, updated_at = ${now}
       FROM ${due} d WHERE t.id = d.id AND d.withdrawn IS NOT NULL
       RETURNING t.id, t.schedule_name, d.withdrawn AS reason`;
