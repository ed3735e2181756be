import type { DelayedTask, TaskId, TaskState } from '../task.types.js';
import type { TraceCarrier } from '../trace-carrier.js';

/** A `delayed_task` row as `pg` returns it: bigint as a decimal string, jsonb parsed. */
export interface TaskRow {
  id: TaskId;
  type: string;
  key: string | null;
  entity: string | null;
  payload: unknown;
  due_at: Date;
  executed_at: Date | null;
  cancelled_at: Date | null;
  dead_at: Date | null;
  attempts: number;
  max_attempts: number;
  last_error: string | null;
  locked_by: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A claimed row: the task with `executed_at` set and this attempt counted. */
export interface ClaimRow extends TaskRow {
  /** The trace context it was scheduled in (kept through retries, snoozes and revives). */
  trace_context: TraceCarrier | null;
  /** An occurrence of a recurring schedule: its name, its instant and the one before. */
  schedule_name: string | null;
  occurrence_at: Date | null;
  previous_occurrence_at: Date | null;
  /** An occurrence's schedule's overlap policy (null for a one-off task, or a schedule since removed). */
  overlap: 'allow' | 'skip' | null;
}

export interface DueRow {
  id: TaskId;
  due_at: Date;
}

/** The one reading of the state columns; `PENDING` below is its SQL twin. */
export function stateOf(row: TaskRow): TaskState {
  if (row.executed_at) return 'executed';
  if (row.cancelled_at) return 'cancelled';
  if (row.dead_at) return 'dead';
  return 'pending';
}

export function toTask<P>(row: TaskRow): DelayedTask<P> {
  return {
    id: row.id,
    type: row.type,
    key: row.key,
    entity: row.entity ?? null,
    payload: row.payload as P,
    dueAt: row.due_at,
    state: stateOf(row),
    executedAt: row.executed_at,
    cancelledAt: row.cancelled_at,
    deadAt: row.dead_at,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lastError: row.last_error,
    lockedBy: row.locked_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

// ---------------------------------------------------------------- the SQL the statements on delayed_task share

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
