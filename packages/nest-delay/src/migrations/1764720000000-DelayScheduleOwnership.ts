import type { MigrationInterface, QueryRunner } from 'typeorm';
import { lockTables } from './table-locks.js';

/**
 * Version 10: schedules that hold through deploys and run-time changes.
 * - `delay_schedule_declaration`: what each instance declares in code
 *   (@RecurringTask), keyed by instance id; a declared schedule is removed
 *   only when no instance with a live lease declares it.
 * - `delay_schedule.generation`: bumped by every change of its rule; each
 *   occurrence records the generation it was planned under
 *   (`delayed_task.schedule_generation`), so a claim can tell an occurrence
 *   of an older rule (null: planned before this version, taken as current).
 * - `plan_error`, `plan_failures`, `plan_retry_at`: a schedule whose plan
 *   failed is set aside until `plan_retry_at`, with its error kept.
 * - `delay_schedule_missed`: occurrences a claim dropped by the catch-up
 *   policy, appended without touching the schedule's row (a claim holds
 *   task locks, so waiting on a schedule's row could deadlock with a pause);
 *   the planner folds them into `delay_schedule.missed` under its row lock.
 *
 * It alters delay_schedule and delayed_task: it takes both locks first, with
 * a short wait and tries again (lockTables), so it never deadlocks with the
 * claims and plans of instances still running the previous release.
 */
export class DelayScheduleOwnership1764720000000 implements MigrationInterface {
  name = 'DelayScheduleOwnership1764720000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Both tables it alters, before anything else (see lockTables).
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

  async down(queryRunner: QueryRunner): Promise<void> {
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
