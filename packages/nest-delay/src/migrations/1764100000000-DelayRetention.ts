import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Version 4: what the pruner needs to find old finished tasks without
 * scanning the table. Executed and cancelled tasks by when they finished
 * (dead-lettered ones already have delayed_task_dead_idx).
 *
 * Built inside the migration's transaction, since TypeORM refuses a
 * migration that opts out of it under its default transaction mode. On a
 * table large enough for the build to block writes for long, create it
 * first by hand with the same statement plus CONCURRENTLY; IF NOT EXISTS
 * then makes this a no-op.
 */
export class DelayRetention1764100000000 implements MigrationInterface {
  name = 'DelayRetention1764100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE INDEX IF NOT EXISTS delayed_task_finished_idx
      ON delayed_task ((coalesce(executed_at, cancelled_at)))
      WHERE executed_at IS NOT NULL OR cancelled_at IS NOT NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS delayed_task_finished_idx`);
  }
}
