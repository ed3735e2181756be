import type { Logger } from '@nestjs/common';
import { runInTaskScope, type CurrentTask } from '../observer/task-scope.js';
import type { Occurrence } from '../schedules/schedule.types.js';
import type { TaskRow } from '../tasks/task-row.js';
import type { Fate } from '../tasks/task-transitions.js';
import type { PassSpans } from '../tracing/pass-spans.js';
import type { TaskId } from '../task.types.js';
import type { ClaimRow } from './claim-statements.js';

/* A claimed task's handler call: its scope, its span, its occurrence, its fate's log line. */

/** A committed fate worth a line, inside the task's scope: a structured logger adds its id, type, key and attempt. */
export function logFate(logger: Logger, fate: Fate): void {
  const { row } = fate;
  const name = `Task ${row.id} (${row.type})`;
  let line: [level: 'warn' | 'error', message: string] | undefined;
  if (fate.transition === 'retry')
    line = [
      'warn',
      `${name} failed attempt ${row.attempts}/${row.max_attempts}, retrying at ${new Date(fate.dueAtMs).toISOString()}: ${fate.error}`,
    ];
  else if (fate.transition === 'exhaust')
    line = ['error', `${name} dead-lettered after ${fate.attempts} attempt(s): ${fate.reason}`];
  else if (fate.transition === 'discard')
    line = ['error', `${name} dead-lettered at once: ${fate.reason}`];
  if (line) {
    const [level, message] = line;
    runInTaskScope(scopeOf(row), () => logger[level](message));
  }
}

/**
 * A handler's result as a promise: one that throws before its first await
 * rejects it. With spans, it runs under its task's: what it does nests there.
 */
export function call(
  spans: PassSpans | undefined,
  id: TaskId,
  fn: () => unknown,
): Promise<unknown> {
  try {
    return Promise.resolve(spans ? spans.within(id, fn) : fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** `fn` under the task's span, when there are spans. */
export function within<T>(spans: PassSpans | undefined, id: TaskId, fn: () => T): T {
  return spans ? spans.within(id, fn) : fn();
}

export function occurrenceOf(row: ClaimRow): Occurrence | undefined {
  if (row.schedule_name === null || row.occurrence_at === null) return undefined;
  return {
    schedule: row.schedule_name,
    scheduledAt: row.occurrence_at,
    previousAt: row.previous_occurrence_at,
  };
}

export function scopeOf(row: TaskRow): CurrentTask {
  return { id: row.id, type: row.type, key: row.key, attempt: row.attempts };
}
