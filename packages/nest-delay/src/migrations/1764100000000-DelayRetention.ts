import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/**
 * Version 4: executed and cancelled tasks by when they finished, for the
 * pruner. Built in the migration's transaction (TypeORM's default mode
 * refuses one without); on a large table create it first by hand with
 * CONCURRENTLY, and IF NOT EXISTS makes this a no-op.
 */
export class DelayRetention1764100000000 implements DelayMigration {
  name = 'DelayRetention1764100000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`
      CREATE INDEX IF NOT EXISTS delayed_task_finished_idx
      ON delayed_task ((coalesce(executed_at, cancelled_at)))
      WHERE executed_at IS NOT NULL OR cancelled_at IS NOT NULL`);
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS delayed_task_finished_idx`);
  }
}
