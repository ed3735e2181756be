import { OrderStateConflictError } from './errors/order-state-conflict.error.js';
import type { Order } from './order.entity.js';
import {
  AUTO_REVIEW_STARS,
  type Actor,
  type OrderEventType,
  type OrderStatus,
} from './order-status.js';
import { alreadyReviewed, statusConflict } from './orders.messages.js';

/**
 * The lifecycle's rules, apart from any I/O: given the locked order, the
 * columns a change sets and the event it appends, or a 409 naming the
 * current state. The system's steps return undefined when there is nothing
 * left to do (the user got there first).
 */
export interface Transition {
  changes: Partial<Order>;
  event: { type: OrderEventType; actor: Actor; data: Record<string, unknown> };
}

function requireStatus(order: Order, required: OrderStatus, action: string): void {
  if (order.status !== required) {
    throw new OrderStateConflictError(
      order.id,
      statusConflict(order.id, order.status, action, required),
    );
  }
}

/** A new order, waiting for payment until `paymentDeadline`. */
export function create(
  id: string,
  input: { userId: string; amountCents: number },
  now: Date,
  paymentDeadline: Date,
): { order: Order; event: Transition['event'] } {
  const order: Order = {
    id,
    userId: input.userId,
    amountCents: input.amountCents,
    status: 'PENDING_PAYMENT',
    closeReason: null,
    reviewStatus: 'NONE',
    stars: null,
    comment: null,
    createdAt: now,
    paidAt: null,
    finishedAt: null,
    closedAt: null,
    reviewedAt: null,
    paymentDeadline,
    autoReviewAt: null,
  };
  const data = { userId: input.userId, amountCents: input.amountCents };
  return { order, event: { type: 'CREATED', actor: 'user', data } };
}

export function pay(order: Order, now: Date): Transition {
  requireStatus(order, 'PENDING_PAYMENT', 'paid');
  return {
    changes: { status: 'PAID', paidAt: now, paymentDeadline: null },
    event: { type: 'PAID', actor: 'user', data: {} },
  };
}

export function cancelByUser(order: Order, now: Date): Transition {
  requireStatus(order, 'PENDING_PAYMENT', 'cancelled');
  return close(now, 'USER_CANCELLED', 'user');
}

export function closeUnpaid(order: Order, now: Date): Transition | undefined {
  if (order.status !== 'PENDING_PAYMENT') return undefined;
  return close(now, 'PAYMENT_TIMEOUT', 'system');
}

function close(now: Date, reason: 'USER_CANCELLED' | 'PAYMENT_TIMEOUT', actor: Actor): Transition {
  return {
    changes: { status: 'CLOSED', closeReason: reason, closedAt: now, paymentDeadline: null },
    event: { type: 'CLOSED', actor, data: { reason } },
  };
}

export function finish(order: Order, now: Date, autoReviewAt: Date): Transition {
  requireStatus(order, 'PAID', 'finished');
  return {
    changes: { status: 'FINISHED', finishedAt: now, autoReviewAt },
    event: { type: 'FINISHED', actor: 'user', data: { autoReviewAt: autoReviewAt.toISOString() } },
  };
}

/**
 * A paid order (finished or not) is refunded; every task it still has
 * waiting was cancelled in the same transaction (`cancelledTasks` of them).
 */
export function refund(order: Order, now: Date, cancelledTasks: number): Transition {
  if (order.status !== 'PAID' && order.status !== 'FINISHED') {
    throw new OrderStateConflictError(
      order.id,
      statusConflict(order.id, order.status, 'refunded', 'PAID or FINISHED'),
    );
  }
  return {
    changes: { status: 'REFUNDED', autoReviewAt: null },
    event: { type: 'REFUNDED', actor: 'user', data: { cancelledTasks } },
  };
}

export function review(order: Order, now: Date, stars: number, comment: string | null): Transition {
  requireStatus(order, 'FINISHED', 'reviewed');
  if (order.reviewStatus !== 'NONE') {
    throw new OrderStateConflictError(order.id, alreadyReviewed(order.id, order.reviewStatus));
  }
  return {
    changes: { reviewStatus: 'REVIEWED', stars, comment, reviewedAt: now, autoReviewAt: null },
    event: { type: 'REVIEWED', actor: 'user', data: { stars, comment } },
  };
}

export function autoReview(order: Order, now: Date): Transition | undefined {
  if (order.status !== 'FINISHED' || order.reviewStatus !== 'NONE') return undefined;
  return {
    changes: {
      reviewStatus: 'AUTO_REVIEWED',
      stars: AUTO_REVIEW_STARS,
      reviewedAt: now,
      autoReviewAt: null,
    },
    event: { type: 'AUTO_REVIEWED', actor: 'system', data: { stars: AUTO_REVIEW_STARS } },
  };
}
