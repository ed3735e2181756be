import type { Sql } from '../store/sql.js';
import type { TaskId } from '../task.types.js';
import type { DueRow } from './task-row.js';

/*
 * SQL pieces the statements on delayed_task share: what pending means, and
 * the record of a transition in a task's history; and the two plain reads of
 * pending tasks that feed the wheel and the claim queue (the stranded sweep's,
 * the backlog drainer's).
 */

/** A task is pending (will still run) while none of these is set. */
export const PENDING = `executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`;

export function pendingIn(alias: string): string {
  return `${alias}.executed_at IS NULL AND ${alias}.cancelled_at IS NULL AND ${alias}.dead_at IS NULL`;
}

/**
 * The same test for look-ups by id, written not to match the partial indexes'
 * predicate so the planner can only use the primary key: with the plain form
 * and stale statistics (after a bulk insert) it scans the due-order index.
 */
export const PENDING_BY_ID = `num_nulls(executed_at, cancelled_at, dead_at) = 3`;

/**
 * The history of tasks with an entity (`delay_task_event`): each transition's
 * statement records its event with this CTE, so it commits or rolls back
 * with the change; rows without an entity record nothing.
 */
export type TaskEventName =
  | 'scheduled'
  | 'replaced'
  | 'debounced'
  | 'started'
  | 'retried'
  | 'snoozed'
  | 'dead'
  | 'charged'
  | 'cancelled'
  | 'rescheduled'
  | 'revived';

/**
 * SQL expressions, over the columns of `rows`, for an event's fields; each
 * left out is NULL. `event` is an SQL expression too (a literal, or a CASE).
 */
export interface EventFields {
  event: string;
  at: string;
  attempt?: string;
  dueAt?: string;
  durationMs?: string;
  detail?: string;
  traceId?: string;
  instance?: string;
}

/** An INSERT (for a CTE) of one event per row of `rows` (with `id`, `entity`) that has an entity. */
export function recordEvents(rows: string, f: EventFields): string {
  return `INSERT INTO delay_task_event
       (task_id, entity, at, event, attempt, due_at, duration_ms, detail, trace_id, instance)
     SELECT id, entity, ${f.at}, ${f.event}, ${f.attempt ?? 'NULL'}, ${f.dueAt ?? 'NULL'},
            ${f.durationMs ?? 'NULL'}, ${f.detail ?? 'NULL'}, ${f.traceId ?? 'NULL'}, ${f.instance ?? 'NULL'}
     FROM ${rows} WHERE entity IS NOT NULL`;
}

/** The trace id in a `trace_context` (W3C traceparent `00-<trace id>-<span id>-<flags>`), or NULL. */
export const traceIdOf = (traceContext: string) =>
  `nullif(split_part(${traceContext}->>'traceparent', '-', 2), '')`;

export const named = (event: TaskEventName) => `'${event}'`;

/** The claim's event: an attempt of each claimed task with an entity started, on `instance`. */
export const startedEvents = (claimed: string, now: string, instance: string) =>
  recordEvents(claimed, {
    event: named('started'),
    at: now,
    attempt: 'attempts',
    traceId: traceIdOf('trace_context'),
    instance,
  });

/** Of fired ids the claim did not take, those still pending: to wait again in the wheel. */
export function findPendingByIds(sql: Sql, ids: TaskId[]) {
  return sql.rows<DueRow & { locked_by: string | null }>(
    `SELECT id, due_at, locked_by FROM delayed_task WHERE id = ANY($1::bigint[]) AND ${PENDING_BY_ID}`,
    [ids],
  );
}

/**
 * The next page of overdue tasks that no instance holds, in due order after
 * the keyset `after` (null: from the first). A backlog is fed to the claim by
 * id like a burst, without first leasing every row into a wheel only to fire
 * it at once. Reads only: the claim decides who runs a task, so instances
 * reading the same page cannot run it twice.
 */
export function findOverdueUnleased(
  sql: Sql,
  now: Date,
  after: DueRow | null,
  limit: number,
  types: readonly string[],
) {
  return sql.rows<DueRow & { type: string }>(
    `SELECT id, due_at, type FROM delayed_task
     WHERE locked_by IS NULL AND ${PENDING} AND due_at <= $1
       AND (due_at, id) > ($2::timestamptz, $3::bigint) AND type = ANY($5::text[])
     ORDER BY due_at, id
     LIMIT $4`,
    [now, after?.due_at ?? '-infinity', after?.id ?? '0', limit, types],
  );
}
