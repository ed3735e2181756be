import type { Sql } from '../store/sql.js';
import type { BulkScheduleResult, TaskId } from '../task.types.js';
import { keyHolders, type BulkRow } from './insert-statements.js';
import type { NormalizedRequest } from './schedule-request.js';
import type { WindowPolicy } from './window-policy.js';

/** scheduleMany's rows of an unkeyed insert, from its ids (one per request, in order). */
export function unkeyedBulkRows(
  ids: TaskId[],
  reqs: NormalizedRequest[],
  lockedBy: string | null,
  nowMs: number,
  policy: WindowPolicy,
): BulkRow[] {
  return ids.map((id, i): BulkRow => ({
    id,
    key: null,
    due_at: new Date(reqs[i].dueAtMs),
    locked_by: policy.isWithinWindow(reqs[i].dueAtMs, nowMs) ? lockedBy : null,
    n: i + 1,
  }));
}

/**
 * One result per request, in order: `scheduled` with its id, or `duplicate`
 * with the id of the pending task that already holds its key (in the table,
 * or earlier in the same call).
 */
export async function bulkResults(
  sql: Sql,
  reqs: NormalizedRequest[],
  rows: BulkRow[],
  unkeyed: boolean,
): Promise<BulkScheduleResult[]> {
  const scheduled = (row: BulkRow): BulkScheduleResult => ({
    status: 'scheduled',
    id: row.id,
    key: row.key,
    dueAt: row.due_at,
  });
  if (unkeyed) return rows.map(scheduled);
  const byPosition = new Map(rows.map((row) => [row.n - 1, row]));
  const missingKeys = reqs.filter((req, i) => !byPosition.has(i)).map((req) => req.key as string);
  const holders = missingKeys.length > 0 ? await keyHolders(sql, missingKeys) : [];
  const holderOf = new Map(holders.map((row) => [row.key, row.id]));
  return reqs.map((req, i): BulkScheduleResult => {
    const row = byPosition.get(i);
    if (row) return scheduled(row);
    const key = req.key as string;
    const id = holderOf.get(key) as TaskId;
    return { status: 'duplicate', id, key };
  });
}
