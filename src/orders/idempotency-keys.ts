/**
 * How long an Idempotency-Key holds: 24 hours, as payment APIs keep theirs.
 * A key older than this creates a new order, and the purge deletes it.
 */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

export const PURGE_IDEMPOTENCY_KEYS_SCHEDULE = 'orders.purge-idempotency-keys';

/**
 * The purge runs in its occurrence's claim transaction, so it is bounded:
 * keys per DELETE, and DELETEs per occurrence. What is left over, the next
 * occurrence continues (every 10 minutes: up to 60,000 keys an hour).
 */
export const PURGE_BATCH_SIZE = 1_000;
export const PURGE_BATCHES_PER_RUN = 10;
