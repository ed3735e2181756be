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

/** The one reading of the state columns; `PENDING` in ./task-sql.ts is its SQL twin. */
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
