import type { DelayMigration, MigrationRunner } from './migration-runner.js';
import { lockTables } from './table-locks.js';

/**
 * Version 10: schedules that hold through deploys: each instance's
 * declarations, a rule's generation on the schedule and its occurrences,
 * a failed plan set aside, and `delay_schedule_missed` (appended by claims,
 * which must not wait on a schedule's row). It takes both tables' locks first
 * (lockTables), so it never deadlocks with the previous version's claims and plans.
 */
export class DelayScheduleOwnership1764720000000 implements DelayMigration {
  name = 'DelayScheduleOwnership1764720000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await lockTables(queryRunner, ['delayed_task', 'delay_schedule']);
    await queryRunner.query(`
      CREATE TABLE delay_schedule_declaration (
        name        text        NOT NULL,
        instance_id text        NOT NULL,
        rule        jsonb       NOT NULL,
        declared_at timestamptz NOT NULL,
        PRIMARY KEY (name, instance_id)
      )`);
    await queryRunner.query(
      `CREATE INDEX delay_schedule_declaration_instance_idx ON delay_schedule_declaration (instance_id)`,
    );
    await queryRunner.query(`
      ALTER TABLE delay_schedule
        ADD COLUMN generation    bigint      NOT NULL DEFAULT 1,
        ADD COLUMN plan_error    text        NULL,
        ADD COLUMN plan_failures int         NOT NULL DEFAULT 0,
        ADD COLUMN plan_retry_at timestamptz NULL`);
    await queryRunner.query(`ALTER TABLE delayed_task ADD COLUMN schedule_generation bigint NULL`);
    await queryRunner.query(`
      CREATE TABLE delay_schedule_missed (
        id            bigserial   PRIMARY KEY,
        schedule_name text        NOT NULL,
        missed        int         NOT NULL,
        at            timestamptz NOT NULL
      )`);
    await queryRunner.query(
      `CREATE INDEX delay_schedule_missed_name_idx ON delay_schedule_missed (schedule_name)`,
    );
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE IF EXISTS delay_schedule_missed`);
    await queryRunner.query(`ALTER TABLE delayed_task DROP COLUMN IF EXISTS schedule_generation`);
    await queryRunner.query(`
      ALTER TABLE delay_schedule
        DROP COLUMN IF EXISTS generation,
        DROP COLUMN IF EXISTS plan_error,
        DROP COLUMN IF EXISTS plan_failures,
        DROP COLUMN IF EXISTS plan_retry_at`);
    await queryRunner.query(`DROP TABLE IF EXISTS delay_schedule_declaration`);
  }
}
