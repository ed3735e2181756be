import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Version 6: the correction each instance adds to its system clock to read
 * the database's time (see DatabaseClock), written at every heartbeat, so
 * the instance list shows how far each host's clock is off and that the
 * engine corrects it. Null for an instance that runs on a clock of its own
 * (a test's ManualClock) or has not beaten since the upgrade.
 */
export class DelayClockCorrection1764300000000 implements MigrationInterface {
  name = 'DelayClockCorrection1764300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE delay_instance ADD COLUMN IF NOT EXISTS clock_correction_ms double precision NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delay_instance DROP COLUMN IF EXISTS clock_correction_ms`);
  }
}
