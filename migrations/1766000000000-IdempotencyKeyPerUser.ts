import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency-Keys belong to the user who sent them (the token's `sub`): one
 * user's key can neither take another's nor replay the order it made. They
 * move to `user_idempotency_key`, unique per (user_id, key); the keys
 * already stored are copied there by the next migration
 * (IdempotencyKeysCopied1766000000001).
 *
 * An expand step: `order_idempotency_key` (one key for everyone) stays, and
 * this release still writes each key there too. The release before it reads
 * and writes only that table and runs beside this one during a rolling
 * deploy, so a client's retry answered by either release finds the order
 * the other one made (orders.service.ts, earlierOrderFor). A later release,
 * once no instance of the one before this runs, drops it.
 */
export class IdempotencyKeyPerUser1766000000000 implements MigrationInterface {
  name = 'IdempotencyKeyPerUser1766000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // As the shared table: the key row is inserted before the order it names,
    // so the foreign key is checked at commit.
    await queryRunner.query(`
      CREATE TABLE user_idempotency_key (
        user_id      text        NOT NULL CHECK (char_length(user_id) BETWEEN 1 AND 64),
        key          text        NOT NULL CHECK (char_length(key) BETWEEN 1 AND 200),
        request_hash text        NOT NULL,
        order_id     uuid        NOT NULL REFERENCES orders (id) DEFERRABLE INITIALLY DEFERRED,
        created_at   timestamptz NOT NULL,
        PRIMARY KEY (user_id, key)
      )`);
    await queryRunner.query(
      `CREATE INDEX user_idempotency_key_created_idx ON user_idempotency_key (created_at)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // The shared table has every key this release took (each written there too, unless another user held it).
    await queryRunner.query(`DROP TABLE user_idempotency_key`);
  }
}
