import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Version 6: the correction each instance applies to its system clock (DatabaseClock); null on a clock of its own. */
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
