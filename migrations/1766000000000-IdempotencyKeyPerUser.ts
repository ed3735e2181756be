import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency-Keys belong to the user who sent them (the token's `sub`): one
 * user's key can neither take another's nor replay the order it made. The
 * key's uniqueness becomes (user_id, key); a key already stored gets the user
 * of the order it created, who was the only one to send it until now.
 */
export class IdempotencyKeyPerUser1766000000000 implements MigrationInterface {
  name = 'IdempotencyKeyPerUser1766000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE order_idempotency_key ADD COLUMN user_id text`);
    await queryRunner.query(`
      UPDATE order_idempotency_key k SET user_id = o.user_id
      FROM orders o WHERE o.id = k.order_id`);
    await queryRunner.query(`
      ALTER TABLE order_idempotency_key
        ALTER COLUMN user_id SET NOT NULL,
        ADD CONSTRAINT order_idempotency_key_user_id_check CHECK (char_length(user_id) BETWEEN 1 AND 64),
        DROP CONSTRAINT order_idempotency_key_pkey,
        ADD CONSTRAINT order_idempotency_key_pkey PRIMARY KEY (user_id, key)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // A key two users hold cannot be unique alone: the newest stays (a key is a 24-hour memory).
    await queryRunner.query(`
      DELETE FROM order_idempotency_key a USING order_idempotency_key b
      WHERE a.key = b.key AND (a.created_at, a.user_id) < (b.created_at, b.user_id)`);
    await queryRunner.query(`
      ALTER TABLE order_idempotency_key
        DROP CONSTRAINT order_idempotency_key_pkey,
        ADD CONSTRAINT order_idempotency_key_pkey PRIMARY KEY (key),
        DROP COLUMN user_id`);
  }
}
