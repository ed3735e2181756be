import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/**
 * Version 2 of the package's schema: `delayed_task.locked_at` was written by
 * every lease and read by nothing (`delay_instance` says when an instance
 * last beat, which is what a takeover needs), so it goes.
 */
export class DelayDropLockedAt1763900000000 implements DelayMigration {
  name = 'DelayDropLockedAt1763900000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delayed_task DROP COLUMN IF EXISTS locked_at`);
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delayed_task ADD COLUMN locked_at timestamptz NULL`);
  }
}
