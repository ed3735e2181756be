import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/**
 * Version 14: attempt notes found by the tasks they list (`task_ids && …`,
 * asked by every claim). Without it each claim scanned `delay_attempt` and
 * every deleted note vacuum had not yet removed. GIN without `fastupdate`: a
 * pending list would be read whole by every claim, the scan again.
 */
export class DelayAttemptTaskIndex1764820000000 implements DelayMigration {
  name = 'DelayAttemptTaskIndex1764820000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`
      CREATE INDEX IF NOT EXISTS delay_attempt_task_ids_idx ON delay_attempt
      USING gin (task_ids) WITH (fastupdate = off)`);
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS delay_attempt_task_ids_idx`);
  }
}
