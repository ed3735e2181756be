import type { Actor, OrderEventType } from './order-status.js';

/** What listeners of `order.*` receive, once the change committed. */
export interface OrderDomainEvent {
  orderId: string;
  type: OrderEventType;
  actor: Actor;
  /** The event's data as stored in order_event: `{ reason }` for CLOSED, `{ stars, comment }` for REVIEWED... */
  data: Record<string, unknown>;
  at: Date;
}

/** `order.created`, `order.paid`, `order.closed`, `order.finished`, `order.reviewed`, `order.auto-reviewed`. */
export function orderEventName(type: OrderEventType): string {
  return `order.${type.toLowerCase().replace(/_/g, '-')}`;
}
