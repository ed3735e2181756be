import type { TaskId, TaskRef } from '../task.types.js';
import { PENDING, type TaskRow } from './task-row.js';
import type { Sql } from '../store/sql.js';

/** $1 id or null, $2 key or null. By key: the pending task holding it, else its latest. */
export const REF_MATCH = `(($1::bigint IS NOT NULL AND id = $1::bigint) OR ($1::bigint IS NULL AND key = $2::text))`;

export function refParams(ref: TaskRef): [TaskId | null, string | null] {
  return 'id' in ref ? [ref.id, null] : [null, ref.key];
}

export async function getTask(sql: Sql, ref: TaskRef): Promise<TaskRow | undefined> {
  const [row] = await sql.rows<TaskRow>(
    `SELECT * FROM delayed_task WHERE ${REF_MATCH} ORDER BY (${PENDING}) DESC, id DESC LIMIT 1`,
    refParams(ref),
  );
  return row;
}

/** Which tasks to list; every field narrows, none means all. */
export interface TaskFilter {
  state?: 'pending' | 'executed' | 'cancelled' | 'dead';
  type?: string;
  key?: string;
  keyPrefix?: string;
  entity?: string;
  /** Tasks whose payload contains this JSON (jsonb `@>`: a subset match). */
  payload?: unknown;
  dueFrom?: Date;
  dueBefore?: Date;
}

/** SQL for one state; the reading in task-row.ts's stateOf is its twin. */
const STATE_TEST = {
  pending: PENDING,
  executed: 'executed_at IS NOT NULL',
  cancelled: 'cancelled_at IS NOT NULL',
  dead: 'dead_at IS NOT NULL',
} as const;

/** Tasks matching a filter, in due order: each filter a parameter whose null disables it; the state test comes from a fixed set. */
export function findTasks(sql: Sql, filter: TaskFilter, limit: number) {
  const state = filter.state ? STATE_TEST[filter.state] : 'true';
  return sql.rows<TaskRow>(
    `SELECT * FROM delayed_task
     WHERE ${state}
       AND ($1::text IS NULL OR type = $1)
       AND ($2::text IS NULL OR key = $2)
       AND ($3::text IS NULL OR starts_with(key, $3))
       AND ($4::jsonb IS NULL OR payload @> $4::jsonb)
       AND ($5::timestamptz IS NULL OR due_at >= $5)
       AND ($6::timestamptz IS NULL OR due_at < $6)
       AND ($8::text IS NULL OR entity = $8)
     ORDER BY due_at, id
     LIMIT $7`,
    [
      filter.type ?? null,
      filter.key ?? null,
      filter.keyPrefix ?? null,
      filter.payload === undefined ? null : JSON.stringify(filter.payload),
      filter.dueFrom ?? null,
      filter.dueBefore ?? null,
      limit,
      filter.entity ?? null,
    ],
  );
}
