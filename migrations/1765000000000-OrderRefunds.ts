import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Refunds (POST /orders/:id/refund): a paid or finished order becomes
 * REFUNDED, with a REFUNDED event; a refunded order keeps its review, if it
 * had one. The CHECKs list what the API knows.
 */
export class OrderRefunds1765000000000 implements MigrationInterface {
  name = 'OrderRefunds1765000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE orders
        DROP CONSTRAINT orders_status_check,
        ADD CONSTRAINT orders_status_check
          CHECK (status IN ('PENDING_PAYMENT', 'PAID', 'FINISHED', 'CLOSED', 'REFUNDED')),
        DROP CONSTRAINT orders_review_needs_finish,
        ADD CONSTRAINT orders_review_needs_finish
          CHECK (review_status = 'NONE' OR status IN ('FINISHED', 'REFUNDED'))`);
    await queryRunner.query(`
      ALTER TABLE order_event DROP CONSTRAINT order_event_type_check,
        ADD CONSTRAINT order_event_type_check CHECK (type IN
          ('CREATED', 'PAID', 'CLOSED', 'FINISHED', 'REVIEWED', 'AUTO_REVIEWED', 'CUSTOMER_NOTIFIED', 'REFUNDED'))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Their rows go first: the older CHECKs would refuse them.
    await queryRunner.query(`DELETE FROM order_event WHERE type = 'REFUNDED'`);
    await queryRunner.query(`DELETE FROM orders WHERE status = 'REFUNDED'`);
    await queryRunner.query(`
      ALTER TABLE order_event DROP CONSTRAINT order_event_type_check,
        ADD CONSTRAINT order_event_type_check CHECK (type IN
          ('CREATED', 'PAID', 'CLOSED', 'FINISHED', 'REVIEWED', 'AUTO_REVIEWED', 'CUSTOMER_NOTIFIED'))`);
    await queryRunner.query(`
      ALTER TABLE orders
        DROP CONSTRAINT orders_status_check,
        ADD CONSTRAINT orders_status_check
          CHECK (status IN ('PENDING_PAYMENT', 'PAID', 'FINISHED', 'CLOSED')),
        DROP CONSTRAINT orders_review_needs_finish,
        ADD CONSTRAINT orders_review_needs_finish CHECK (review_status = 'NONE' OR status = 'FINISHED')`);
  }
}
