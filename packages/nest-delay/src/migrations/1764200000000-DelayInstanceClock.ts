import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Version 5: the database's clock at each instance's last heartbeat, beside its own, for the instance list's clock offset. */
export class DelayInstanceClock1764200000000 implements MigrationInterface {
  name = 'DelayInstanceClock1764200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE delay_instance ADD COLUMN IF NOT EXISTS db_heartbeat_at timestamptz NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delay_instance DROP COLUMN IF EXISTS db_heartbeat_at`);
  }
}
