import { PENDING } from './pending.js';

// Each statement takes either an id ($1 bigint) or a key ($2 text); the other is null.
const BY_ID_OR_KEY = `(($1::bigint IS NOT NULL AND id = $1::bigint) OR ($1::bigint IS NULL AND key = $2::text))`;

/** $1 id, $2 key, $3 now. */
export const CANCEL_TASK = `
  UPDATE delayed_task SET cancelled_at = $3, updated_at = $3, locked_by = NULL, locked_at = NULL
  WHERE ${BY_ID_OR_KEY} AND ${PENDING}
  RETURNING id`;

/** $1 id, $2 key, $3 new due_at, $4 now, $5 locked_by. */
export const RESCHEDULE_TASK = `
  UPDATE delayed_task
  SET due_at = $3, updated_at = $4,
      locked_by = $5::text, locked_at = CASE WHEN $5::text IS NULL THEN NULL ELSE $4::timestamptz END
  WHERE ${BY_ID_OR_KEY} AND ${PENDING}
  RETURNING *`;

/** A dead-lettered task back to pending, due now, with fresh attempts. $1 id, $2 key, $3 now, $4 locked_by. */
export const RETRY_DEAD_TASK = `
  UPDATE delayed_task
  SET dead_at = NULL, attempts = 0, due_at = $3, updated_at = $3, locked_by = $4::text, locked_at = $3
  WHERE id = (
    SELECT id FROM delayed_task WHERE ${BY_ID_OR_KEY} AND dead_at IS NOT NULL ORDER BY id DESC LIMIT 1
  )
  RETURNING *`;

/** By id, or by key: the pending task with it, else its most recent one. $1 id, $2 key. */
export const GET_TASK = `
  SELECT * FROM delayed_task
  WHERE ${BY_ID_OR_KEY}
  ORDER BY (${PENDING}) DESC, id DESC
  LIMIT 1`;

/** $1 key. */
export const GET_PENDING_BY_KEY = `SELECT * FROM delayed_task WHERE key = $1 AND ${PENDING}`;
