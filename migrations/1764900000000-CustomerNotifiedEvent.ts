import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An order's history records the customer notifications sent about it
 * (`CUSTOMER_NOTIFIED`, written by the order.notify-closed task): the CHECK on
 * order_event.type lists the types the API knows.
 */
export class CustomerNotifiedEvent1764900000000 implements MigrationInterface {
  name = 'CustomerNotifiedEvent1764900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE order_event DROP CONSTRAINT order_event_type_check,
        ADD CONSTRAINT order_event_type_check CHECK (type IN
          ('CREATED', 'PAID', 'CLOSED', 'FINISHED', 'REVIEWED', 'AUTO_REVIEWED', 'CUSTOMER_NOTIFIED'))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Their rows go first: the older CHECK would refuse them.
    await queryRunner.query(`DELETE FROM order_event WHERE type = 'CUSTOMER_NOTIFIED'`);
    await queryRunner.query(`
      ALTER TABLE order_event DROP CONSTRAINT order_event_type_check,
        ADD CONSTRAINT order_event_type_check CHECK (type IN
          ('CREATED', 'PAID', 'CLOSED', 'FINISHED', 'REVIEWED', 'AUTO_REVIEWED'))`);
  }
}
