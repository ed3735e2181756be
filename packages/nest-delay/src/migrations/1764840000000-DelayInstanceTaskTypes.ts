import type { DelayMigration, MigrationRunner } from './migration-runner.js';
import { lockTables } from './table-locks.js';

/**
 * Version 16: each instance's handled task types, written by its heartbeat,
 * to tell a task no live instance can run. Null: an earlier version's
 * instance, counted as running every type. The column rewrites nothing.
 */
export class DelayInstanceTaskTypes1764840000000 implements DelayMigration {
  name = 'DelayInstanceTaskTypes1764840000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await lockTables(queryRunner, ['delay_instance']);
    await queryRunner.query(
      `ALTER TABLE delay_instance ADD COLUMN IF NOT EXISTS task_types text[]`,
    );
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delay_instance DROP COLUMN IF EXISTS task_types`);
  }
}
