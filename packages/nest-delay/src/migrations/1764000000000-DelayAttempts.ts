import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/**
 * Version 3: cut-off attempts. A claim that dies with its process rolls back
 * its attempt count too, so `delay_attempt` records, outside the claim's
 * transaction and under a session advisory lock, the attempt note of the
 * tasks it runs; a note left unlocked is orphaned, and the task's next claim
 * charges the attempt and flags it `interrupted_at` (it then runs alone).
 */
export class DelayAttempts1764000000000 implements DelayMigration {
  name = 'DelayAttempts1764000000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delayed_task ADD COLUMN interrupted_at timestamptz NULL`);
    await queryRunner.query(`
      CREATE TABLE delay_attempt (
        id          bigserial   PRIMARY KEY,
        instance_id text        NOT NULL,
        task_ids    bigint[]    NOT NULL,
        started_at  timestamptz NOT NULL,
        recorded_at timestamptz NOT NULL
      )`);
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE delay_attempt`);
    await queryRunner.query(`ALTER TABLE delayed_task DROP COLUMN interrupted_at`);
  }
}
