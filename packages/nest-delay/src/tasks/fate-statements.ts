import type { Sql } from '../store/sql.js';
import {
  pendingIn,
  named,
  recordEvents,
  traceIdOf,
  type EventFields,
  type TaskRow,
} from './task-row.js';
import type { Charge, Discard, Exhaust, Fate, Retry, Skip, Snooze } from './task-transitions.js';

/**
 * Writes a claimed attempt's fate in the claim transaction (after its
 * savepoint's rollback, if it failed). `complete` writes nothing and returns
 * no promise, so the common case costs no microtask.
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
 * Writes a charge, only if the row is pending with the attempts it was
 * decided from (a task that ran elsewhere meanwhile is not charged). The
 * attempt note `noteId` is deleted in the same statement if it applied, else
 * kept, orphaned, for the task's next claim. Returns whether it applied.
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

/** What a charge adds to a retry or a dead-letter: the attempts it was decided from, and its attempt note. */
interface Charged {
  fromAttempts: number;
  noteId: string | null;
}

/** retry, from a claim (`charged` absent: the row is locked by the claim) or a charge; returns whether it was written. */
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

/** exhaust, discard: dead-lettered, kept for inspection and a revive; from a claim or a charge, as writeRetry. */
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

/** The event CTE over `written` (with its leading comma); empty without an entity, so such a task pays nothing for history. */
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
