import { PENDING } from './pending.js';

/**
 * $1 type, $2 key, $3 payload (JSON text), $4 due_at, $5 max_attempts,
 * $6 locked_by (the scheduling instance when the task goes straight into its
 * wheel, else null), $7 now.
 * A pending task with the same key wins: the insert returns no row.
 */
export const INSERT_TASK = `
  INSERT INTO delayed_task (type, key, payload, due_at, max_attempts, locked_by, locked_at, created_at, updated_at)
  VALUES ($1, $2, $3::jsonb, $4, $5, $6::text, CASE WHEN $6::text IS NULL THEN NULL ELSE $7::timestamptz END, $7, $7)
  ON CONFLICT (key) WHERE key IS NOT NULL AND ${PENDING} DO NOTHING
  RETURNING *`;

/**
 * Many tasks in one statement (arrays zipped by unnest), for bulk producers.
 * $1 types, $2 keys, $3 payloads (JSON text), $4 due_at, $5 max_attempts,
 * $6 locked_by (this instance, or null), $7 now, $8 the window's horizon: only
 * tasks due before it are leased to $6, the rest wait for the loader.
 */
export const INSERT_TASKS = `
  INSERT INTO delayed_task (type, key, payload, due_at, max_attempts, locked_by, locked_at, created_at, updated_at)
  SELECT t.type, t.key, t.payload::jsonb, t.due_at, t.max_attempts,
         CASE WHEN t.due_at < $8 THEN $6::text END,
         CASE WHEN t.due_at < $8 AND $6::text IS NOT NULL THEN $7::timestamptz END,
         $7, $7
  FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::int[])
       AS t(type, key, payload, due_at, max_attempts)
  ON CONFLICT (key) WHERE key IS NOT NULL AND ${PENDING} DO NOTHING
  RETURNING id, key, due_at, locked_by`;

/** Moves the pending task holding a key. $1 key, then as INSERT_TASK's $1,$3..$7. */
export const REPLACE_BY_KEY = `
  UPDATE delayed_task
  SET type = $2, payload = $3::jsonb, due_at = $4, max_attempts = $5, attempts = 0, last_error = NULL,
      locked_by = $6::text, locked_at = CASE WHEN $6::text IS NULL THEN NULL ELSE $7::timestamptz END,
      updated_at = $7
  WHERE key = $1 AND ${PENDING}
  RETURNING *`;
