import type { Sql } from '../store/sql.js';
import { toTask, type TaskRow, type TaskEventName } from '../tasks/task-row.js';
import type { DelayedTask, TaskId } from '../task.types.js';

/** One step of an entity's timeline. */
export interface TimelineEntry {
  at: Date;
  taskId: TaskId;
  /** The task's type and key. */
  type: string;
  key: string | null;
  /**
   * What happened: an event of the history, or `executed` (the task's last
   * attempt completed: its claim's commit, read from the task's row).
   */
  event: TaskEventName | 'executed';
  /** The attempt it concerns (started, retried, snoozed, dead, charged, executed). */
  attempt: number | null;
  /** The instance that ran the attempt (from its `started` event). */
  instance: string | null;
  /** How long the attempt ran, from its claim to its fate; null for a completed one (see docs). */
  durationMs: number | null;
  /** The due time it was given (scheduled, moved, retried, snoozed). */
  dueAt: Date | null;
  /** Its error or reason, or how it came about. */
  detail: string | null;
  /** The trace of the request that scheduled it (W3C trace id), when traced. */
  traceId: string | null;
}

/** Everything about one entity's tasks, past and to come. */
export interface EntityTimeline {
  entity: string;
  /** What happened, in time order. */
  entries: TimelineEntry[];
  /** What is still due: the pending tasks, by due time. */
  due: Array<{ taskId: TaskId; type: string; key: string | null; dueAt: Date }>;
  /** Every task of the entity the table still has, in id order. */
  tasks: DelayedTask[];
  /**
   * What retention forgets: finished tasks (executed, cancelled) are deleted
   * with their history this long after they finished, dead-lettered ones
   * after `deadForgottenAfterMs`; null: kept. A timeline shows nothing of a
   * task pruned before it was read.
   */
  finishedForgottenAfterMs: number | null;
  deadForgottenAfterMs: number | null;
}

interface EventRow {
  id: string;
  task_id: TaskId;
  at: Date;
  event: TaskEventName;
  attempt: number | null;
  due_at: Date | null;
  duration_ms: number | null;
  detail: string | null;
  trace_id: string | null;
  instance: string | null;
}

/** The entity's task rows and history rows: two reads, each through its entity index. */
export async function readTimeline(sql: Sql, entity: string) {
  const [tasks, events] = await Promise.all([
    sql.rows<TaskRow & { trace_id: string | null }>(
      `SELECT *, nullif(split_part(trace_context->>'traceparent', '-', 2), '') AS trace_id
       FROM delayed_task WHERE entity = $1 ORDER BY id`,
      [entity],
    ),
    sql.rows<EventRow>(
      `SELECT id, task_id::text AS task_id, at, event, attempt, due_at, duration_ms, detail, trace_id, instance
       FROM delay_task_event WHERE entity = $1`,
      [entity],
    ),
  ]);
  return { tasks, events };
}

/**
 * The timeline from the two reads (pure): each history event joined to its
 * task, the attempt's instance carried from its `started` event to its fate,
 * a completed attempt added from its row, and a task older than its history
 * (scheduled before the history existed) shown scheduled at its creation.
 */
export function buildTimeline(
  entity: string,
  tasks: Array<TaskRow & { trace_id: string | null }>,
  events: EventRow[],
  retention: { keepFinishedMs: number | null; keepDeadMs: number | null },
): EntityTimeline {
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const ordered = [...events].sort(
    (a, b) => a.at.getTime() - b.at.getTime() || Number(BigInt(a.id) - BigInt(b.id)),
  );
  /** The instance of each task's attempt, from its `started` event. */
  const instanceOf = new Map<string, string | null>();
  for (const e of ordered) {
    if (e.event === 'started') instanceOf.set(`${e.task_id}:${e.attempt}`, e.instance);
  }
  const entries: TimelineEntry[] = [];
  const scheduledSeen = new Set<TaskId>();
  for (const e of ordered) {
    const task = byId.get(e.task_id);
    if (e.event === 'scheduled') scheduledSeen.add(e.task_id);
    entries.push({
      at: e.at,
      taskId: e.task_id,
      type: task?.type ?? 'unknown',
      key: task?.key ?? null,
      event: e.event,
      attempt: e.attempt,
      instance: e.instance ?? instanceOf.get(`${e.task_id}:${e.attempt}`) ?? null,
      durationMs: e.duration_ms,
      dueAt: e.due_at,
      detail: e.detail,
      traceId: e.trace_id,
    });
  }
  for (const task of tasks) {
    const base = { taskId: task.id, type: task.type, key: task.key, traceId: task.trace_id };
    if (!scheduledSeen.has(task.id)) {
      entries.push({
        ...base,
        at: task.created_at,
        event: 'scheduled',
        attempt: null,
        instance: null,
        durationMs: null,
        dueAt: null,
        detail: 'from the task row: scheduled before its history was kept',
      });
    }
    if (task.executed_at) {
      entries.push({
        ...base,
        at: task.executed_at,
        event: 'executed',
        attempt: task.attempts,
        instance: instanceOf.get(`${task.id}:${task.attempts}`) ?? null,
        durationMs: null,
        dueAt: task.due_at,
        detail: null,
      });
    }
  }
  // Stable: at equal times, history order, then what the rows add.
  entries.sort((a, b) => a.at.getTime() - b.at.getTime());
  const pending = tasks.filter((task) => !task.executed_at && !task.cancelled_at && !task.dead_at);
  return {
    entity,
    entries,
    due: pending
      .sort((a, b) => a.due_at.getTime() - b.due_at.getTime())
      .map((task) => ({ taskId: task.id, type: task.type, key: task.key, dueAt: task.due_at })),
    tasks: tasks.map((task) => toTask(task)),
    finishedForgottenAfterMs: retention.keepFinishedMs,
    deadForgottenAfterMs: retention.keepDeadMs,
  };
}
