/** The values the API and the database share; each list is the source of its type. */
export const ORDER_STATUSES = [
  'PENDING_PAYMENT',
  'PAID',
  'FINISHED',
  'CLOSED',
  'REFUNDED',
] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const CLOSE_REASONS = ['PAYMENT_TIMEOUT', 'USER_CANCELLED'] as const;
export type CloseReason = (typeof CLOSE_REASONS)[number];

export const REVIEW_STATUSES = ['NONE', 'REVIEWED', 'AUTO_REVIEWED'] as const;
export type ReviewStatus = (typeof REVIEW_STATUSES)[number];

export const ORDER_EVENT_TYPES = [
  'CREATED',
  'PAID',
  'CLOSED',
  'FINISHED',
  'REVIEWED',
  'AUTO_REVIEWED',
  'CUSTOMER_NOTIFIED',
  'REFUNDED',
] as const;
export type OrderEventType = (typeof ORDER_EVENT_TYPES)[number];

/** Who made a change: the user through the API, or the system through a delayed task. */
export type Actor = 'user' | 'system';

export const AUTO_REVIEW_STARS = 5;
