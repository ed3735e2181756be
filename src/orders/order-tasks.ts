/** The delayed tasks an order schedules: their types, business keys and payload. */
export const CLOSE_UNPAID_TASK = 'order.close-unpaid';
export const AUTO_REVIEW_TASK = 'order.auto-review';
/** Tells the customer their unpaid order was closed; scheduled by the close, in its transaction. */
export const NOTIFY_CLOSED_TASK = 'order.notify-closed';

export interface OrderTaskPayload {
  orderId: string;
}

/** The entity every task of an order belongs to: cancel or move them all at once by it. */
export const orderEntity = (orderId: string) => `order:${orderId}`;

export const closeUnpaidKey = (orderId: string) => `order:${orderId}:close-unpaid`;
export const autoReviewKey = (orderId: string) => `order:${orderId}:auto-review`;
export const notifyClosedKey = (orderId: string) => `order:${orderId}:notify-closed`;
