import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `orders` holds each order's current state, `order_event` its history (one
 * row per state change, written in the same transaction as the change) and
 * `order_idempotency_key` the Idempotency-Key of each create that sent one.
 *
 * The CHECKs repeat the API's validation so that the database can never hold
 * an order the API could not have produced: a status with a close reason that
 * does not belong to it, stars without a review, an amount out of range.
 * Timestamps come from the app's Clock (a parameter), never from now().
 */
export class CreateOrders1763800001000 implements MigrationInterface {
  name = 'CreateOrders1763800001000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE orders (
        id               uuid        PRIMARY KEY,
        user_id          text        NOT NULL CHECK (char_length(user_id) BETWEEN 1 AND 64),
        amount_cents     integer     NOT NULL CHECK (amount_cents BETWEEN 1 AND 1000000000),
        status           text        NOT NULL CHECK (status IN ('PENDING_PAYMENT', 'PAID', 'FINISHED', 'CLOSED')),
        close_reason     text        NULL     CHECK (close_reason IN ('PAYMENT_TIMEOUT', 'USER_CANCELLED')),
        review_status    text        NOT NULL CHECK (review_status IN ('NONE', 'REVIEWED', 'AUTO_REVIEWED')),
        stars            smallint    NULL     CHECK (stars BETWEEN 1 AND 5),
        comment          text        NULL     CHECK (char_length(comment) <= 1000),
        created_at       timestamptz NOT NULL,
        paid_at          timestamptz NULL,
        finished_at      timestamptz NULL,
        closed_at        timestamptz NULL,
        reviewed_at      timestamptz NULL,
        payment_deadline timestamptz NULL,
        auto_review_at   timestamptz NULL,
        CONSTRAINT orders_closed_has_reason CHECK ((status = 'CLOSED') = (close_reason IS NOT NULL)),
        CONSTRAINT orders_closed_has_time CHECK ((status = 'CLOSED') = (closed_at IS NOT NULL)),
        CONSTRAINT orders_review_has_stars CHECK ((review_status = 'NONE') = (stars IS NULL)),
        CONSTRAINT orders_review_needs_finish CHECK (review_status = 'NONE' OR status = 'FINISHED')
      )`);
    // GET /orders pages newest first by (created_at, id), optionally filtered.
    await queryRunner.query(`CREATE INDEX orders_created_idx ON orders (created_at DESC, id DESC)`);
    await queryRunner.query(
      `CREATE INDEX orders_status_created_idx ON orders (status, created_at DESC, id DESC)`,
    );
    await queryRunner.query(
      `CREATE INDEX orders_user_created_idx ON orders (user_id, created_at DESC, id DESC)`,
    );

    await queryRunner.query(`
      CREATE TABLE order_event (
        id        bigserial   PRIMARY KEY,
        order_id  uuid        NOT NULL REFERENCES orders (id),
        type      text        NOT NULL CHECK (type IN ('CREATED', 'PAID', 'CLOSED', 'FINISHED', 'REVIEWED', 'AUTO_REVIEWED')),
        actor     text        NOT NULL CHECK (actor IN ('user', 'system')),
        data      jsonb       NOT NULL DEFAULT '{}'::jsonb,
        at        timestamptz NOT NULL
      )`);
    // An order's history in the order it was written (its row lock serializes the writers).
    await queryRunner.query(`CREATE INDEX order_event_order_idx ON order_event (order_id, id)`);

    // The key row is inserted first in the create transaction, before the order
    // it names, so the foreign key is checked at commit.
    await queryRunner.query(`
      CREATE TABLE order_idempotency_key (
        key          text        PRIMARY KEY CHECK (char_length(key) BETWEEN 1 AND 200),
        request_hash text        NOT NULL,
        order_id     uuid        NOT NULL REFERENCES orders (id) DEFERRABLE INITIALLY DEFERRED,
        created_at   timestamptz NOT NULL
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE order_idempotency_key`);
    await queryRunner.query(`DROP TABLE order_event`);
    await queryRunner.query(`DROP TABLE orders`);
  }
}
