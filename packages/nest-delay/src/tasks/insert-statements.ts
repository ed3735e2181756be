import type { NormalizedRequest } from './schedule-request.js';
import { compareIds } from '../task-ref.js';
import type { BulkScheduleResult, TaskId } from '../task.types.js';
import type { WindowPolicy } from './window-policy.js';
import { PENDING, named, recordEvents, traceIdOf, type TaskRow } from './task-row.js';
import type { Sql } from '../store/sql.js';
import type { TraceCarrier } from '../trace-carrier.js';

/** The event of a new task with an entity, for a CTE over rows inserted at `$now`. */
const scheduledEvent = (rows: string, now: string) =>
  recordEvents(rows, {
    event: named('scheduled'),
    at: now,
    dueAt: 'due_at',
    traceId: traceIdOf('trace_context'),
  });

// A keyed schedule is insertTask, in action-statements.ts beside the replace it may be.

/** No key, nothing to collide with: a plain INSERT spares the speculative insertion ON CONFLICT costs even for a null key. */
export async function insertUnkeyedTask(
  sql: Sql,
  req: NormalizedRequest,
  lockedBy: string | null,
  now: Date,
  traceContext: TraceCarrier | null = null,
): Promise<TaskId> {
  const insert = `INSERT INTO delayed_task (type, payload, due_at, max_attempts, locked_by, created_at, updated_at, trace_context, entity)
     VALUES ($1, $2::jsonb, $3, $4, $5::text, $6, $6, $7::jsonb, $8)`;
  const [row] = await sql.rows<{ id: TaskId }>(
    req.entity === null
      ? `${insert} RETURNING id`
      : `WITH inserted AS (${insert} RETURNING id, entity, due_at, trace_context),
         event AS (${scheduledEvent('inserted', '$6')})
         SELECT id FROM inserted`,
    [
      req.type,
      req.payloadJson,
      new Date(req.dueAtMs),
      req.maxAttempts,
      lockedBy,
      now,
      traceContext,
      req.entity,
    ],
  );
  return row.id;
}

/** The row insertUnkeyedTask wrote, as RETURNING * would have read it back. */
export function newTaskRow(
  id: TaskId,
  req: NormalizedRequest,
  lockedBy: string | null,
  now: Date,
): InsertedRow {
  return {
    id,
    type: req.type,
    key: null,
    entity: req.entity,
    // Parsed from the JSON sent, so the caller gets a copy, as from the database.
    payload: JSON.parse(req.payloadJson),
    due_at: new Date(req.dueAtMs),
    executed_at: null,
    cancelled_at: null,
    dead_at: null,
    attempts: 0,
    max_attempts: req.maxAttempts,
    last_error: null,
    locked_by: lockedBy,
    created_at: now,
    updated_at: now,
    inserted: true,
  };
}

export interface InsertedRow extends TaskRow {
  inserted: boolean;
}

export interface BulkRow {
  id: TaskId;
  key: string | null;
  due_at: Date;
  locked_by: string | null;
  /** Position of its request in the caller's array, from 1 (WITH ORDINALITY). */
  n: number;
}

/**
 * Many tasks in one statement. A key already pending or repeated in the
 * batch keeps its first task (those requests return no row). Each row names
 * its request: by key, or, unkeyed, by rank, since rows are inserted in
 * request order and draw their ids from the sequence in that order.
 */
export function insertTasks(
  sql: Sql,
  reqs: NormalizedRequest[],
  lockedBy: string | null,
  now: Date,
  horizon: Date,
  traceContext: TraceCarrier | null = null,
): Promise<BulkRow[]> {
  return sql.rows<BulkRow>(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::int[], $10::text[])
         WITH ORDINALITY AS t(type, key, payload, due_at, max_attempts, entity, n)
     ), inserted AS (
       INSERT INTO delayed_task (type, key, payload, due_at, max_attempts, locked_by, created_at, updated_at, trace_context, entity)
       SELECT type, key, payload::jsonb, due_at, max_attempts,
              CASE WHEN due_at < $8 THEN $6::text END, $7, $7, $9::jsonb, entity
       FROM input ORDER BY n
       ON CONFLICT (key) WHERE key IS NOT NULL AND ${PENDING} DO NOTHING
       RETURNING id, key, due_at, locked_by, entity, trace_context
     )${reqs.some((r) => r.entity !== null) ? `, event AS (${scheduledEvent('inserted', '$7')})` : ''}
     SELECT i.id, i.key, i.due_at, i.locked_by, f.n::int AS n
     FROM inserted i
     JOIN (SELECT key, min(n) AS n FROM input WHERE key IS NOT NULL GROUP BY key) f ON f.key = i.key
     UNION ALL
     SELECT i.id, i.key, i.due_at, i.locked_by, u.n::int
     FROM (SELECT *, row_number() OVER (ORDER BY id) AS rank FROM inserted WHERE key IS NULL) i
     JOIN (SELECT n, row_number() OVER (ORDER BY n) AS rank FROM input WHERE key IS NULL) u
       ON u.rank = i.rank`,
    [
      reqs.map((r) => r.type),
      reqs.map((r) => r.key),
      reqs.map((r) => r.payloadJson),
      reqs.map((r) => new Date(r.dueAtMs)),
      reqs.map((r) => r.maxAttempts),
      lockedBy,
      now,
      horizon,
      traceContext,
      reqs.map((r) => r.entity),
    ],
  );
}

/**
 * Many unkeyed tasks in one INSERT; sorting the returned ids restores request
 * order (as above). Due times travel as epoch ms and a value every request
 * shares travels once: less client work per row than Dates.
 */
export async function insertUnkeyedTasks(
  sql: Sql,
  reqs: NormalizedRequest[],
  lockedBy: string | null,
  now: Date,
  horizon: Date,
  traceContext: TraceCarrier | null = null,
): Promise<TaskId[]> {
  const withEntity = reqs.some((r) => r.entity !== null);
  const rows = await sql.rows<{ id: TaskId }>(
    `${withEntity ? 'WITH inserted AS (' : ''}INSERT INTO delayed_task (type, payload, due_at, max_attempts, locked_by, created_at, updated_at, trace_context, entity)
     SELECT ($1::text[])[least(n, cardinality($1::text[]))], payload::jsonb, due_at,
            ($4::int[])[least(n, cardinality($4::int[]))],
            CASE WHEN due_at < $7 THEN $5::text END, $6, $6, $8::jsonb,
            ($9::text[])[least(n, cardinality($9::text[]))]
     FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS t(payload, due_ms, n),
          LATERAL (SELECT timestamptz 'epoch' + due_ms * interval '1 millisecond' AS due_at) d
     ORDER BY n
     RETURNING id${withEntity ? `, entity, due_at, trace_context), event AS (${scheduledEvent('inserted', '$6')}) SELECT id FROM inserted` : ''}`,
    [
      shared(reqs, (r) => r.type),
      reqs.map((r) => r.payloadJson),
      // Whole milliseconds for the bigint, rounded up: never earlier than asked.
      reqs.map((r) => Math.ceil(r.dueAtMs)),
      shared(reqs, (r) => r.maxAttempts),
      lockedBy,
      now,
      horizon,
      traceContext,
      shared(reqs, (r) => r.entity),
    ],
  );
  return rows.map((row) => row.id).sort(compareIds);
}

/** `[value]` when every request has the same one, else one per request. */
function shared<T>(reqs: NormalizedRequest[], of: (req: NormalizedRequest) => T): T[] {
  const first = of(reqs[0]);
  return reqs.every((req) => of(req) === first) ? [first] : reqs.map(of);
}

/**
 * For each of `keys`, the pending task holding it, else its latest task: the
 * one a bulk insert's duplicate collided with, even if it ran since.
 */
export function keyHolders(sql: Sql, keys: string[]) {
  return sql.rows<{ id: TaskId; key: string }>(
    `SELECT DISTINCT ON (key) id, key FROM delayed_task
     WHERE key = ANY($1::text[])
     ORDER BY key, (${PENDING}) DESC, id DESC`,
    [keys],
  );
}

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
