import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/** Version 5: the database's clock at each instance's last heartbeat, beside its own, for the instance list's clock offset. */
export class DelayInstanceClock1764200000000 implements DelayMigration {
  name = 'DelayInstanceClock1764200000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE delay_instance ADD COLUMN IF NOT EXISTS db_heartbeat_at timestamptz NULL`,
    );
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delay_instance DROP COLUMN IF EXISTS db_heartbeat_at`);
  }
}
