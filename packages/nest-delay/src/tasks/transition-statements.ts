import type { TaskRef } from '../task.types.js';
import type { Sql } from '../store/sql.js';
import type { TraceCarrier } from '../tracing/trace-carrier.js';
import type { InsertedRow } from './insert-statements.js';
import type { NormalizedRequest } from './schedule-request.js';
import { PENDING, pendingIn } from './pending.js';
import type { TaskRow } from './task-row.js';
import { REF_MATCH, refParams } from './task-statements.js';
import {
  named,
  recordEvents,
  traceIdOf,
  type EventFields,
  type TaskEventName,
} from './task-events.js';
import type {
  CancelAction,
  Charge,
  DebounceAction,
  Discard,
  Exhaust,
  Fate,
  MoveAction,
  ReplaceAction,
  Retry,
  Skip,
  Snooze,
} from './task-transitions.js';

/**
 * The one statement of each transition of a `delayed_task` row (the
 * decisions are in task-transitions.ts; docs/how-it-works.md, "State
 * transitions", has the table). The claim's own statement, which also
 * clears `interrupted_at`, is claimTasks (claim/claim-statements.ts).
 */

// ---------------------------------------------------------------- fates and charges

/**
 * Writes a claimed attempt's fate, inside the claim transaction (after the
 * task's savepoint was rolled back, if it failed). `complete` writes
 * nothing: the claim's `executed_at` commits with the handler's effects.
 * Returns a promise only when there is something to write, so the common
 * case costs no microtask.
 */
export function writeFate(sql: Sql, fate: Fate, now: Date): Promise<unknown> | undefined {
  switch (fate.transition) {
    case 'complete':
      return undefined;
    case 'retry':
      return writeRetry(sql, fate, fate.row.attempts, now);
    case 'snooze':
      return writeSnooze(sql, fate, now);
    case 'skip':
      return writeSkip(sql, fate, now);
    case 'discard':
    case 'exhaust':
      return writeDeadLetter(sql, fate, fate.row.attempts, now);
  }
}

/**
 * Charges cut-off attempts (see `charge` in task-transitions.ts): the retry
 * or dead-letter statement, with the charged count and the flag. Applied
 * only if the row still has the attempts the charge was decided from, and
 * is pending: a task that ran elsewhere meanwhile is not charged. `noteId`:
 * the attempt note this charge accounts for, deleted in the same statement
 * if the charge applied (a claim cut off after a handler's timeout; kept
 * otherwise, an orphaned note that the task's next claim charges); notes found
 * orphaned by a claim are trimmed by takeOrphanedNotes instead. Returns whether it
 * was charged.
 */
export function writeCharge(
  sql: Sql,
  change: Charge,
  now: Date,
  noteId: string | null,
): Promise<boolean> {
  const charged: Charged = { fromAttempts: change.row.attempts, noteId };
  return change.transition === 'retry'
    ? writeRetry(sql, change, change.attempts, now, charged)
    : writeDeadLetter(sql, change, change.attempts, now, charged);
}

/**
 * What a charge adds to a retry or a dead-letter: the row is as read, not
 * claimed (written only if it still has `fromAttempts` and is pending), it
 * is flagged (`interrupted_at`), and its note goes with the write.
 */
interface Charged {
  fromAttempts: number;
  noteId: string | null;
}

/**
 * retry: pending again at its due time, with its error and `attempts`. From
 * a claim (`charged` absent: the row as claimed, locked by the claim) or a
 * charge. Returns whether it was written.
 */
async function writeRetry(
  sql: Sql,
  retry: Retry,
  attempts: number,
  now: Date,
  charged?: Charged,
): Promise<boolean> {
  const event = eventOf(retry.row, {
    event: named(charged ? 'charged' : 'retried'),
    at: '$7',
    attempt: 'attempts',
    dueAt: 'due_at',
    durationMs: charged ? undefined : sinceStart('$7', '$10'),
    detail: 'last_error',
    traceId: traceIdOf('trace_context'),
  });
  const rows = await sql.rows(
    `WITH written AS (
       UPDATE delayed_task t
       SET executed_at = NULL, attempts = $3, last_error = $4, due_at = $5, locked_by = $6::text,
           interrupted_at = COALESCE($8, t.interrupted_at), updated_at = $7
       WHERE t.id = $1 AND ($2::int IS NULL OR (t.attempts = $2 AND ${pendingIn('t')}))
       RETURNING t.id${event ? ', t.entity, t.attempts, t.due_at, t.last_error, t.trace_context' : ''}
     ), note AS (
       DELETE FROM delay_attempt WHERE id = $9::bigint AND EXISTS (SELECT 1 FROM written)
     )${event}
     SELECT id FROM written`,
    [
      retry.row.id,
      charged?.fromAttempts ?? null,
      attempts,
      retry.error,
      new Date(retry.dueAtMs),
      retry.lockedBy,
      now,
      charged ? now : null,
      charged?.noteId ?? null,
      ...(event && !charged ? [retry.row.executed_at] : []),
    ],
  );
  return rows.length > 0;
}

/**
 * exhaust, discard: dead-lettered, kept, marked and visible, never deleted:
 * for inspection and a revive. From a claim or a charge, as writeRetry.
 */
async function writeDeadLetter(
  sql: Sql,
  fate: Discard | Exhaust,
  attempts: number,
  now: Date,
  charged?: Charged,
): Promise<boolean> {
  const event = eventOf(fate.row, {
    event: named('dead'),
    at: '$5',
    attempt: 'attempts',
    durationMs: charged ? undefined : sinceStart('$5', '$8'),
    detail: 'last_error',
    traceId: traceIdOf('trace_context'),
  });
  const rows = await sql.rows(
    `WITH written AS (
       UPDATE delayed_task t
       SET executed_at = NULL, dead_at = $5, attempts = $3, last_error = $4, locked_by = NULL,
           interrupted_at = COALESCE($6, t.interrupted_at), updated_at = $5
       WHERE t.id = $1 AND ($2::int IS NULL OR (t.attempts = $2 AND ${pendingIn('t')}))
       RETURNING t.id${event ? ', t.entity, t.attempts, t.last_error, t.trace_context' : ''}
     ), note AS (
       DELETE FROM delay_attempt WHERE id = $7::bigint AND EXISTS (SELECT 1 FROM written)
     )${event}
     SELECT id FROM written`,
    [
      fate.row.id,
      charged?.fromAttempts ?? null,
      attempts,
      fate.reason,
      now,
      charged ? now : null,
      charged?.noteId ?? null,
      ...(event && !charged ? [fate.row.executed_at] : []),
    ],
  );
  return rows.length > 0;
}

/** snooze: pending again at its due time, its attempt given back. */
function writeSnooze(sql: Sql, fate: Snooze, now: Date): Promise<unknown> {
  const update = `UPDATE delayed_task
     SET executed_at = NULL, attempts = $2, due_at = $3, locked_by = $4::text, updated_at = $5
     WHERE id = $1`;
  const params = [fate.row.id, fate.attempts, new Date(fate.dueAtMs), fate.lockedBy, now];
  const event = eventOf(fate.row, {
    event: named('snoozed'),
    at: '$5',
    attempt: '$6::int',
    dueAt: 'due_at',
    durationMs: sinceStart('$5', '$7'),
    traceId: traceIdOf('trace_context'),
  });
  if (!event) return sql.rows(update, params);
  return sql.rows(
    `WITH written AS (${update} RETURNING id, entity, due_at, trace_context)${event} SELECT id FROM written`,
    [...params, fate.row.attempts, fate.row.executed_at],
  );
}

/**
 * The event CTE (with its leading comma) of a fate or charge of `row`, for
 * a statement whose CTE `written` returns the row: empty when the task has
 * no entity, so a task without one runs the statement as it always was.
 */
function eventOf(row: TaskRow, fields: EventFields): string {
  return row.entity == null ? '' : `, event AS (${recordEvents('written', fields)})`;
}

/** An attempt's duration in ms: from its claim (`start`) to its fate (`now`). */
const sinceStart = (now: string, start: string) =>
  `(extract(epoch FROM (${now}::timestamptz - ${start}::timestamptz)) * 1000)::int`;

/** skip: cancelled without running, its last error saying why. */
function writeSkip(sql: Sql, fate: Skip, now: Date): Promise<unknown> {
  return sql.rows(
    `UPDATE delayed_task
     SET executed_at = NULL, cancelled_at = $3, last_error = $2, locked_by = NULL, updated_at = $3
     WHERE id = $1`,
    [fate.row.id, fate.reason, now],
  );
}

// ---------------------------------------------------------------- a keyed schedule

/**
 * One keyed task in one statement, whatever its key finds: a new task, or,
 * when a pending task already holds the key, `keep` (touches nothing: the
 * no-op SET only makes Postgres return and lock the row), the **replace**
 * transition (`onKey`: the task becomes this request, see `replace`) or the
 * **debounce** transition (as replace, its due time capped by its maxWait
 * from the task's first request, see `debounce`).
 * Postgres decides insert-or-update atomically, so a task that finishes
 * meanwhile cannot make this fail or loop. `lockedBy` is the instance whose
 * wheel will hold it, or null. `inserted` (xmax is 0 only for a row this
 * statement inserted) tells a new task from a key's existing one, for the
 * observer's "scheduled". `traceContext` is the caller's (see
 * TaskTracing.capture); a replace takes the new caller's.
 */
export async function insertTask(
  sql: Sql,
  req: NormalizedRequest,
  lockedBy: string | null,
  onKey: ReplaceAction | DebounceAction | 'keep',
  now: Date,
  traceContext: TraceCarrier | null = null,
): Promise<InsertedRow> {
  const set =
    onKey === 'keep'
      ? `key = EXCLUDED.key`
      : onKey.transition === 'replace'
        ? `type = EXCLUDED.type, payload = EXCLUDED.payload, due_at = EXCLUDED.due_at,
         max_attempts = EXCLUDED.max_attempts, attempts = 0, last_error = NULL,
         locked_by = EXCLUDED.locked_by, updated_at = EXCLUDED.updated_at,
         trace_context = EXCLUDED.trace_context, entity = EXCLUDED.entity`
        : `type = EXCLUDED.type, payload = EXCLUDED.payload, due_at = ${DEBOUNCED_DUE},
         max_attempts = EXCLUDED.max_attempts, attempts = 0, last_error = NULL,
         locked_by = CASE WHEN ${DEBOUNCED_DUE} < $11 THEN $10::text END,
         updated_at = EXCLUDED.updated_at, trace_context = EXCLUDED.trace_context,
         entity = EXCLUDED.entity`;
  const debounced = onKey !== 'keep' && onKey.transition === 'debounce';
  const upsert = `INSERT INTO delayed_task (type, key, payload, due_at, max_attempts, locked_by, created_at, updated_at, trace_context, entity)
     VALUES ($1, $2, $3::jsonb, $4, $5, $6::text, $7, $7, $8::jsonb, $9)
     ON CONFLICT (key) WHERE key IS NOT NULL AND ${PENDING} DO UPDATE SET ${set}
     RETURNING *, (xmax = 0) AS inserted`;
  // With an entity, the event in the same statement: a new task, or the one its key moved.
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

/**
 * A debounced task's new due time: the request's (EXCLUDED, already capped
 * by maxWait from now), but never past maxWait ($12 ms) after the pending
 * task's first request, its `created_at`, which no update changes.
 */
const DEBOUNCED_DUE = `least(EXCLUDED.due_at, delayed_task.created_at + $12::bigint * interval '1 millisecond')`;

// ---------------------------------------------------------------- the service's actions

/** A task row and whether the action changed it (false: it was not in a state the action fits). */
export interface ActedRow extends TaskRow {
  changed: boolean;
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

/** cancel: a pending task stops being pending (see task-transitions.ts). */
export async function cancelTask(sql: Sql, ref: TaskRef, action: CancelAction, now: Date) {
  const [row] = await sql.rows<ActedRow>(
    actOnTask(`cancelled_at = $3, updated_at = $3, locked_by = $4::text`, pendingIn('t'), {
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
    actOnTask(`due_at = $3, locked_by = $4::text, updated_at = $5`, pendingIn('t'), {
      event: named('rescheduled'),
      at: '$5',
      dueAt: 'due_at',
    }),
    [...refParams(ref), new Date(action.dueAtMs), action.lockedBy, now],
  );
  return row;
}

/** revive: a dead-lettered task back to pending, at the action's due time, with fresh attempts. */
export async function reviveTask(sql: Sql, ref: TaskRef, action: MoveAction, now: Date) {
  const [row] = await sql.rows<ActedRow>(
    actOnTask(
      `dead_at = NULL, attempts = 0, due_at = $3, locked_by = $4::text, updated_at = $5`,
      `t.dead_at IS NOT NULL`,
      { event: named('revived'), at: '$5', dueAt: 'due_at' },
    ),
    [...refParams(ref), new Date(action.dueAtMs), action.lockedBy, now],
  );
  return row;
}

// ---------------------------------------------------------------- schedules' occurrences

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
