import type { EntityManager } from 'typeorm';
import { OrderIdempotencyKey } from './order-idempotency-key.entity.js';
import { Order } from './order.entity.js';
import type { Transition } from './order-transitions.js';

/**
 * The writes of the order lifecycle, each through the EntityManager of the
 * caller's transaction: a request's, or a delayed task's claim transaction.
 */

/** SELECT ... FOR UPDATE: transitions on one order (user or system) run one after another. */
export function lockOrder(manager: EntityManager, id: string): Promise<Order | null> {
  return manager.findOne(Order, { where: { id }, lock: { mode: 'pessimistic_write' } });
}

const INSERT_EVENT = `
  INSERT INTO order_event (order_id, type, actor, data, at)
  VALUES ($1, $2, $3, $4::jsonb, $5)`;

export async function appendEvent(
  manager: EntityManager,
  orderId: string,
  event: Transition['event'],
  at: Date,
): Promise<void> {
  await manager.query(INSERT_EVENT, [
    orderId,
    event.type,
    event.actor,
    JSON.stringify(event.data),
    at,
  ]);
}

/** Writes the change and its event; `order` (locked by the caller) is updated in place. */
export async function applyTransition(
  manager: EntityManager,
  order: Order,
  transition: Transition,
  at: Date,
) {
  await manager.update(Order, { id: order.id }, transition.changes);
  Object.assign(order, transition.changes);
  await appendEvent(manager, order.id, transition.event, at);
}

// ON CONFLICT rather than catching the unique violation: a second request
// with the same key waits here for the first one's transaction, and then gets
// no row (the key committed) or inserts (the first rolled back), without
// aborting its own transaction. A key older than its time to live ($5) is
// taken over as if new; a live one is only locked (the WHERE fails), so that
// the purge cannot delete it before it is read below.
// Keys are per user ($6): the same key from two users is two keys.
const CLAIM_IDEMPOTENCY_KEY = `
  INSERT INTO user_idempotency_key (user_id, key, request_hash, order_id, created_at)
  VALUES ($6, $1, $2, $3, $4)
  ON CONFLICT (user_id, key) DO UPDATE
    SET request_hash = EXCLUDED.request_hash, order_id = EXCLUDED.order_id, created_at = EXCLUDED.created_at
    WHERE user_idempotency_key.created_at <= $5
  RETURNING key`;

// The release before per-user keys keeps one key for everyone in
// order_idempotency_key, and may run beside this one (a rolling deploy;
// migration IdempotencyKeyPerUser1766000000000): a live key there for one of
// this user's orders is an earlier request of theirs, and every key this
// release takes is written there too, unless another user holds it.
const EARLIER_IN_SHARED_KEYS = `
  SELECT k.request_hash AS "requestHash", k.order_id AS "orderId"
  FROM order_idempotency_key k JOIN orders o ON o.id = k.order_id
  WHERE k.key = $1 AND o.user_id = $2 AND k.created_at > $3`;
const SHARE_KEY = `
  INSERT INTO order_idempotency_key (key, request_hash, order_id, created_at)
  VALUES ($1, $2, $3, $4)
  ON CONFLICT (key) DO NOTHING`;

/**
 * Records that `userId`'s key creates order `orderId`. Returns undefined
 * when it did (a new key, or one expired by `expiredBefore`), or the earlier
 * request's hash and order when the user's key is still in use.
 */
export async function claimIdempotencyKey(
  manager: EntityManager,
  claim: {
    userId: string;
    key: string;
    requestHash: string;
    orderId: string;
    at: Date;
    expiredBefore: Date;
  },
): Promise<Pick<OrderIdempotencyKey, 'requestHash' | 'orderId'> | undefined> {
  const [shared]: Array<Pick<OrderIdempotencyKey, 'requestHash' | 'orderId'>> = await manager.query(
    EARLIER_IN_SHARED_KEYS,
    [claim.key, claim.userId, claim.expiredBefore],
  );
  if (shared) return shared;
  const inserted: unknown[] = await manager.query(CLAIM_IDEMPOTENCY_KEY, [
    claim.key,
    claim.requestHash,
    claim.orderId,
    claim.at,
    claim.expiredBefore,
    claim.userId,
  ]);
  if (inserted.length > 0) {
    await manager.query(SHARE_KEY, [claim.key, claim.requestHash, claim.orderId, claim.at]);
    return undefined;
  }
  // The conflicting row is committed and locked by the statement above.
  return manager.findOneByOrFail(OrderIdempotencyKey, { userId: claim.userId, key: claim.key });
}

// SKIP LOCKED: a create taking over an expired key holds its row; the purge
// passes it by rather than wait for that request.
const PURGE_IDEMPOTENCY_KEYS = `
  WITH gone AS (
    DELETE FROM user_idempotency_key
    WHERE (user_id, key) IN (
      SELECT user_id, key FROM user_idempotency_key
      WHERE created_at <= $1
      ORDER BY created_at
      LIMIT $2
      FOR UPDATE SKIP LOCKED)
    RETURNING 1)
  SELECT count(*)::int AS deleted FROM gone`;
// The shared keys' expired rows too, until the release that drops their table.
const PURGE_SHARED_KEYS = `
  DELETE FROM order_idempotency_key
  WHERE key IN (
    SELECT key FROM order_idempotency_key
    WHERE created_at <= $1
    ORDER BY created_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED)`;

/** Deletes up to `limit` keys created at or before `expiredBefore`, oldest first; returns how many. */
export async function purgeIdempotencyKeys(
  manager: EntityManager,
  expiredBefore: Date,
  limit: number,
): Promise<number> {
  const [{ deleted }]: Array<{ deleted: number }> = await manager.query(PURGE_IDEMPOTENCY_KEYS, [
    expiredBefore,
    limit,
  ]);
  await manager.query(PURGE_SHARED_KEYS, [expiredBefore, limit]);
  return deleted;
}
