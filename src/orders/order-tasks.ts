import { defineTask } from 'nest-delay';

/** The delayed tasks an order schedules: their types, business keys and payload. */
export interface OrderTaskPayload {
  orderId: string;
}

/**
 * Declared once with their payload: the handlers and schedule() are
 * checked against it by the compiler (defineTask).
 */
export const CloseUnpaid = defineTask<OrderTaskPayload>('order.close-unpaid');
export const AutoReview = defineTask<OrderTaskPayload>('order.auto-review');
/** Tells the customer their unpaid order was closed; scheduled by the close, in its transaction. */
export const NotifyClosed = defineTask<OrderTaskPayload>('order.notify-closed');

export const CLOSE_UNPAID_TASK = CloseUnpaid.type;
export const AUTO_REVIEW_TASK = AutoReview.type;
export const NOTIFY_CLOSED_TASK = NotifyClosed.type;

/** The entity every task of an order belongs to: cancel or move them all at once by it. */
export const orderEntity = (orderId: string) => `order:${orderId}`;

export const closeUnpaidKey = (orderId: string) => `order:${orderId}:close-unpaid`;
export const autoReviewKey = (orderId: string) => `order:${orderId}:auto-review`;
export const notifyClosedKey = (orderId: string) => `order:${orderId}:notify-closed`;
