import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The keys stored before they were per user, copied to user_idempotency_key
 * as their order's user's, who was the only one to send each until then.
 *
 * A transaction apart from the table's creation (IdempotencyKeyPerUser),
 * because the release before runs beside it: creating a table that
 * references `orders` takes a SHARE ROW EXCLUSIVE lock on `orders` to the
 * end of its transaction, and this copy's foreign-key checks wait on orders
 * that the release's requests hold FOR UPDATE, while those requests' next
 * UPDATE waits on that lock: a deadlock (test/app/rolling-deploy found it).
 * Apart, the creation waits only for the table lock and the copy only for
 * row locks. A key the release takes meanwhile is in the shared table, which
 * this release reads too.
 */
export class IdempotencyKeysCopied1766000000001 implements MigrationInterface {
  name = 'IdempotencyKeysCopied1766000000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      INSERT INTO user_idempotency_key (user_id, key, request_hash, order_id, created_at)
      SELECT o.user_id, k.key, k.request_hash, k.order_id, k.created_at
      FROM order_idempotency_key k JOIN orders o ON o.id = k.order_id
      ON CONFLICT (user_id, key) DO NOTHING`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Every copied key is still in the shared table.
    await queryRunner.query(`DELETE FROM user_idempotency_key`);
  }
}
