import { delayMigrations } from 'nest-delay';
import { CreateOrders1763800001000 } from './1763800001000-CreateOrders.js';
import { IdempotencyKeyCreatedAt1764600000000 } from './1764600000000-IdempotencyKeyCreatedAt.js';
import { CustomerNotifiedEvent1764900000000 } from './1764900000000-CustomerNotifiedEvent.js';
import { OrderRefunds1765000000000 } from './1765000000000-OrderRefunds.js';
import { IdempotencyKeyPerUser1766000000000 } from './1766000000000-IdempotencyKeyPerUser.js';
import { IdempotencyKeysCopied1766000000001 } from './1766000000001-IdempotencyKeysCopied.js';

/**
 * Every migration, in order: the delay package's own, then the orders tables
 * and their later changes.
 * Listed by class so the app, the CLI and the tests share one list.
 */
export const migrations = [
  ...delayMigrations,
  CreateOrders1763800001000,
  IdempotencyKeyCreatedAt1764600000000,
  CustomerNotifiedEvent1764900000000,
  OrderRefunds1765000000000,
  IdempotencyKeyPerUser1766000000000,
  IdempotencyKeysCopied1766000000001,
];
