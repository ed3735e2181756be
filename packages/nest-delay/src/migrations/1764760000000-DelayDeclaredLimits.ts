import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Version 11: declared limits in the table. Each instance writes the limits
 * its handlers declare in code to `delay_type_limit` at boot (`declared_*`,
 * with when and by which instance), and every claim reads them from there:
 * instances running different versions of the code (a rolling deploy) apply
 * one set of limits, the last booted instance's, instead of each its own.
 * `declared_at` null: no instance has declared the type's limits since this
 * version (the claiming instance's code decides, as before).
 */
export class DelayDeclaredLimits1764760000000 implements MigrationInterface {
  name = 'DelayDeclaredLimits1764760000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE delay_type_limit
        ADD COLUMN declared_concurrency int         NULL CHECK (declared_concurrency >= 1),
        ADD COLUMN declared_rate_starts int         NULL CHECK (declared_rate_starts >= 1),
        ADD COLUMN declared_rate_per_ms bigint      NULL CHECK (declared_rate_per_ms >= 1),
        ADD COLUMN declared_per_key     boolean     NOT NULL DEFAULT false,
        ADD COLUMN declared_at          timestamptz NULL,
        ADD COLUMN declared_by          text        NULL,
        ADD CONSTRAINT delay_type_limit_declared_rate
          CHECK ((declared_rate_starts IS NULL) = (declared_rate_per_ms IS NULL))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE delay_type_limit
        DROP CONSTRAINT IF EXISTS delay_type_limit_declared_rate,
        DROP COLUMN IF EXISTS declared_concurrency,
        DROP COLUMN IF EXISTS declared_rate_starts,
        DROP COLUMN IF EXISTS declared_rate_per_ms,
        DROP COLUMN IF EXISTS declared_per_key,
        DROP COLUMN IF EXISTS declared_at,
        DROP COLUMN IF EXISTS declared_by`);
  }
}
