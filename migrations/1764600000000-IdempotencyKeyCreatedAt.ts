import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The purge of expired Idempotency-Keys reads them oldest first by
 * `created_at`: without this index each batch would scan the whole table.
 */
export class IdempotencyKeyCreatedAt1764600000000 implements MigrationInterface {
  name = 'IdempotencyKeyCreatedAt1764600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX order_idempotency_key_created_idx ON order_idempotency_key (created_at)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX order_idempotency_key_created_idx`);
  }
}
