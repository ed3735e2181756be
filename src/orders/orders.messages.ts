import type { OrderStatus, ReviewStatus } from './order-status.js';

// Error text in one place, each naming the id, the field or the state that caused it.
export const orderNotFound = (id: string) => `Order ${id} not found`;

export const statusConflict = (
  id: string,
  status: OrderStatus,
  action: string,
  /** The status it must have, or several: 'PAID or FINISHED'. */
  required: string,
) => `Order ${id} is ${status}: only a ${required} order can be ${action}`;

export const alreadyReviewed = (id: string, reviewStatus: ReviewStatus) =>
  `Order ${id} is already ${reviewStatus}: an order can be reviewed once`;

export const idempotencyKeyReused = (key: string) =>
  `Idempotency-Key ${JSON.stringify(key)} was already used for a different request body`;

export const invalidIdempotencyKey = (length: number) =>
  `Idempotency-Key header must be 1 to 200 characters; got ${length}`;

export const invalidOrderId = (value: string) =>
  `id must be a UUID; got ${JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}...` : value)}`;

export const invalidCursor = 'cursor must be a nextCursor returned by GET /orders';

export const unexpectedBodyFields = (fields: string[]) =>
  fields.map((field) => `property ${field} should not exist`);

export const bodyNotAnObject = 'body must be empty or a JSON object';
