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

// ON CONFLICT DO NOTHING rather than catching the unique violation: a second
// request with the same key waits here for the first one's transaction, and
// then gets no row (the key committed) or inserts (the first rolled back),
// without aborting its own transaction.
const CLAIM_IDEMPOTENCY_KEY = `
  INSERT INTO order_idempotency_key (key, request_hash, order_id, created_at)
  VALUES ($1, $2, $3, $4)
  ON CONFLICT (key) DO NOTHING
  RETURNING key`;

/**
 * Records that this key creates order `orderId`. Returns undefined when it
 * did, or the earlier request's row when the key was already used.
 */
export async function claimIdempotencyKey(
  manager: EntityManager,
  claim: { key: string; requestHash: string; orderId: string; at: Date },
): Promise<OrderIdempotencyKey | undefined> {
  const inserted: unknown[] = await manager.query(CLAIM_IDEMPOTENCY_KEY, [
    claim.key,
    claim.requestHash,
    claim.orderId,
    claim.at,
  ]);
  if (inserted.length > 0) return undefined;
  // Keys are never deleted, and the conflicting row is committed by now.
  return manager.findOneByOrFail(OrderIdempotencyKey, { key: claim.key });
}
