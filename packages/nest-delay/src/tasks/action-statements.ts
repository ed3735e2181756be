import { TaskNotFoundError, TaskStateError } from '../errors/delay-errors.js';
import type { TaskRef } from '../task.types.js';
import type { Sql } from '../store/sql.js';
import type { TraceCarrier } from '../trace-carrier.js';
import type { InsertedRow } from './insert-statements.js';
import type { NormalizedRequest } from './schedule-request.js';
import {
  PENDING,
  pendingIn,
  named,
  recordEvents,
  traceIdOf,
  type EventFields,
  type TaskEventName,
  stateOf,
  type TaskRow,
} from './task-row.js';
import { REF_MATCH, refParams } from './task-statements.js';
import type {
  CancelAction,
  DebounceAction,
  MoveAction,
  ReplaceAction,
} from './task-transitions.js';

// ---------------------------------------------------------------- a keyed schedule

/**
 * One keyed task in one statement: a new task, or `onKey` on the pending
 * task holding the key (`keep`'s no-op SET only returns and locks the row).
 * Insert-or-update is atomic, so a task finishing meanwhile cannot make it
 * fail or loop; `inserted` (xmax = 0) tells a new task from an existing one.
 */
export async function insertTask(
  sql: Sql,
  req: NormalizedRequest,
  lockedBy: string | null,
  onKey: ReplaceAction | DebounceAction | 'keep',
  now: Date,
  traceContext: TraceCarrier | null = null,
): Promise<InsertedRow> {
  // replace and debounce write the same columns; debounce caps due_at at maxWait.
  const [dueAt, lease] =
    onKey === 'keep' || onKey.transition === 'replace'
      ? ['EXCLUDED.due_at', 'EXCLUDED.locked_by']
      : [DEBOUNCED_DUE, `CASE WHEN ${DEBOUNCED_DUE} < $11 THEN $10::text END`];
  const set =
    onKey === 'keep'
      ? `key = EXCLUDED.key`
      : `type = EXCLUDED.type, payload = EXCLUDED.payload, due_at = ${dueAt},
         max_attempts = EXCLUDED.max_attempts, attempts = 0, last_error = NULL,
         locked_by = ${lease}, updated_at = EXCLUDED.updated_at,
         trace_context = EXCLUDED.trace_context, entity = EXCLUDED.entity`;
  const debounced = onKey !== 'keep' && onKey.transition === 'debounce';
  const upsert = `INSERT INTO delayed_task (type, key, payload, due_at, max_attempts, locked_by, created_at, updated_at, trace_context, entity)
     VALUES ($1, $2, $3::jsonb, $4, $5, $6::text, $7, $7, $8::jsonb, $9)
     ON CONFLICT (key) WHERE key IS NOT NULL AND ${PENDING} DO UPDATE SET ${set}
     RETURNING *, (xmax = 0) AS inserted`;
  const moved: TaskEventName | null =
    onKey === 'keep' ? null : onKey.transition === 'replace' ? 'replaced' : 'debounced';
  const [row] = await sql.rows<InsertedRow>(
    req.entity === null
      ? upsert
      : `WITH written AS (${upsert}), event AS (${recordEvents(
          moved === null ? '(SELECT * FROM written WHERE inserted) w' : 'written',
          {
            event: `CASE WHEN inserted THEN ${named('scheduled')} ELSE ${named(moved ?? 'scheduled')} END`,
            at: '$7',
            dueAt: 'due_at',
            traceId: traceIdOf('trace_context'),
          },
        )})
         SELECT * FROM written`,
    [
      req.type,
      req.key,
      req.payloadJson,
      new Date(req.dueAtMs),
      req.maxAttempts,
      lockedBy,
      now,
      traceContext,
      req.entity,
      ...(debounced ? [onKey.lockedBy, new Date(onKey.horizonMs), onKey.maxWaitMs] : []),
    ],
  );
  return row;
}

/** A debounced task's due time: the request's, never past maxWait ($12 ms) after its `created_at`, which no update changes. */
const DEBOUNCED_DUE = `least(EXCLUDED.due_at, delayed_task.created_at + $12::bigint * interval '1 millisecond')`;

// ---------------------------------------------------------------- the service's actions

/** A task row and whether the action changed it (false: it was not in a state the action fits). */
export interface ActedRow extends TaskRow {
  changed: boolean;
}

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

/**
 * Acts on the task a ref names in one statement: locks it, applies `update`
 * if `fits` (on the row as locked, not as the snapshot saw it), and returns
 * it with `changed`, so "not found" and "wrong state" need no separate check.
 * Alias `t`; parameters from $3 on.
 */
function actOnTask(update: string, fits: string, event: EventFields): string {
  return `
    WITH target AS (
      SELECT * FROM delayed_task WHERE ${REF_MATCH}
      ORDER BY (${PENDING}) DESC, id DESC LIMIT 1
      FOR UPDATE
    ), acted AS (
      UPDATE delayed_task t SET ${update}
      FROM target WHERE t.id = target.id AND ${fits}
      RETURNING t.*
    ), event AS (
      ${recordEvents('acted', event)}
    )
    SELECT *, true AS changed FROM acted
    UNION ALL
    SELECT *, false FROM target WHERE NOT EXISTS (SELECT 1 FROM acted)`;
}

/** A moved task's lease ($4), only for a type handled here ($6): another would be held nowhere. */
const LEASED_IF_HANDLED = `CASE WHEN t.type = ANY($6::text[]) THEN $4::text END`;

/** A cancel's SET, for one task or for an entity's: at $3, its lease $4 (the action's). */
export const CANCELLED = `cancelled_at = $3, updated_at = $3, locked_by = $4::text`;

/** cancel: a pending task stops being pending (see task-transitions.ts). */
export async function cancelTask(sql: Sql, ref: TaskRef, action: CancelAction, now: Date) {
  const [row] = await sql.rows<ActedRow>(
    actOnTask(CANCELLED, pendingIn('t'), {
      event: named('cancelled'),
      at: '$3',
    }),
    [...refParams(ref), now, action.lockedBy],
  );
  return row;
}

/** reschedule: a pending task moves to the action's due time and lease. */
export async function rescheduleTask(sql: Sql, ref: TaskRef, action: MoveAction, now: Date) {
  const [row] = await sql.rows<ActedRow>(
    actOnTask(`due_at = $3, locked_by = ${LEASED_IF_HANDLED}, updated_at = $5`, pendingIn('t'), {
      event: named('rescheduled'),
      at: '$5',
      dueAt: 'due_at',
    }),
    [...refParams(ref), new Date(action.dueAtMs), action.lockedBy, now, action.handledTypes],
  );
  return row;
}

/** revive: a dead-lettered task back to pending, at the action's due time, with fresh attempts. */
export async function reviveTask(sql: Sql, ref: TaskRef, action: MoveAction, now: Date) {
  const [row] = await sql.rows<ActedRow>(
    actOnTask(
      `dead_at = NULL, attempts = 0, due_at = $3, locked_by = ${LEASED_IF_HANDLED}, updated_at = $5`,
      `t.dead_at IS NOT NULL`,
      { event: named('revived'), at: '$5', dueAt: 'due_at' },
    ),
    [...refParams(ref), new Date(action.dueAtMs), action.lockedBy, now, action.handledTypes],
  );
  return row;
}
