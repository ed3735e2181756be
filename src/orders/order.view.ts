import type { OrderEvent } from './order-event.entity.js';
import type {
  Actor,
  CloseReason,
  OrderEventType,
  OrderStatus,
  ReviewStatus,
} from './order-status.js';
import type { Order } from './order.entity.js';
import { orderEntity } from './order-tasks.js';

/**
 * Where to read more about an order: its history here, and, when the admin
 * API is mounted (ADMIN_TOKEN), the timeline of its delayed tasks (admin
 * token needed) and the live page opened on it; null without the admin API,
 * where those paths are 404s.
 */
export interface OrderLinksView {
  history: string;
  timeline: string | null;
  timelinePage: string | null;
}

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
  links: OrderLinksView;
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

export function orderLinks(orderId: string, admin: boolean): OrderLinksView {
  // A uuid: nothing in `order:<uuid>` needs escaping in a path or a query.
  const entity = orderEntity(orderId);
  return {
    history: `/orders/${orderId}/history`,
    timeline: admin ? `/admin/api/entities/${entity}/timeline` : null,
    timelinePage: admin ? `/admin#/timeline?entity=${entity}` : null,
  };
}

/** `admin`: whether the admin API is mounted, so that the order links to its timeline. */
export function toOrderView(order: Order, admin: boolean): OrderView {
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
    links: orderLinks(order.id, admin),
  };
}

export function toOrderEventView(event: OrderEvent): OrderEventView {
  return { type: event.type, at: event.at.toISOString(), by: event.actor, data: event.data };
}
