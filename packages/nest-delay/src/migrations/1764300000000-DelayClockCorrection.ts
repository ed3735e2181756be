import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/** Version 6: the correction each instance applies to its system clock (DatabaseClock); null on a clock of its own. */
export class DelayClockCorrection1764300000000 implements DelayMigration {
  name = 'DelayClockCorrection1764300000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE delay_instance ADD COLUMN IF NOT EXISTS clock_correction_ms double precision NULL`,
    );
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delay_instance DROP COLUMN IF EXISTS clock_correction_ms`);
  }
}
