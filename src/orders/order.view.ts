import type { OrderEvent } from './order-event.entity.js';
import type {
  Actor,
  CloseReason,
  OrderEventType,
  OrderStatus,
  ReviewStatus,
} from './order-status.js';
import type { Order } from './order.entity.js';

/** An order as the API returns it: times as ISO-8601 strings or null. */
export interface OrderView {
  id: string;
  userId: string;
  amountCents: number;
  status: OrderStatus;
  closeReason: CloseReason | null;
  reviewStatus: ReviewStatus;
  stars: number | null;
  comment: string | null;
  createdAt: string;
  paidAt: string | null;
  finishedAt: string | null;
  closedAt: string | null;
  reviewedAt: string | null;
  paymentDeadline: string | null;
  autoReviewAt: string | null;
}

export interface OrderEventView {
  type: OrderEventType;
  at: string;
  by: Actor;
  data: Record<string, unknown>;
}

export interface OrderPageView {
  items: OrderView[];
  nextCursor: string | null;
}

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

export function toOrderView(order: Order): OrderView {
  return {
    id: order.id,
    userId: order.userId,
    amountCents: order.amountCents,
    status: order.status,
    closeReason: order.closeReason,
    reviewStatus: order.reviewStatus,
    stars: order.stars,
    comment: order.comment,
    createdAt: order.createdAt.toISOString(),
    paidAt: iso(order.paidAt),
    finishedAt: iso(order.finishedAt),
    closedAt: iso(order.closedAt),
    reviewedAt: iso(order.reviewedAt),
    paymentDeadline: iso(order.paymentDeadline),
    autoReviewAt: iso(order.autoReviewAt),
  };
}

export function toOrderEventView(event: OrderEvent): OrderEventView {
  return { type: event.type, at: event.at.toISOString(), by: event.actor, data: event.data };
}
