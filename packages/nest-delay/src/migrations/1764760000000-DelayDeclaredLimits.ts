import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/**
 * Version 11: the limits handlers declare in code, written at boot, so
 * instances of different versions apply one set (the last booted one's).
 * `declared_at` null: none declared since; the claiming instance's code decides.
 */
export class DelayDeclaredLimits1764760000000 implements DelayMigration {
  name = 'DelayDeclaredLimits1764760000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
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

  async down(queryRunner: MigrationRunner): Promise<void> {
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
