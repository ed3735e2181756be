import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/**
 * Version 8: recurring schedules. Each occurrence becomes one `delayed_task`
 * naming its schedule and instant; the unique index keeps it to one task per
 * occurrence, ever. Its build blocks writes: migrate a large table at a quiet moment.
 */
export class DelaySchedules1764500000000 implements DelayMigration {
  name = 'DelaySchedules1764500000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE delay_schedule (
        name         text        PRIMARY KEY,
        type         text        NOT NULL,
        cron         text        NULL,
        time_zone    text        NOT NULL DEFAULT 'UTC',
        every_ms     bigint      NULL,
        payload      jsonb       NOT NULL DEFAULT 'null'::jsonb,
        catch_up     text        NOT NULL CHECK (catch_up IN ('skip', 'one', 'all')),
        catch_up_cap int         NOT NULL CHECK (catch_up_cap > 0),
        overlap      text        NOT NULL CHECK (overlap IN ('allow', 'skip')),
        paused       boolean     NOT NULL DEFAULT false,
        in_code      boolean     NOT NULL,
        next_at      timestamptz NULL,
        last_at      timestamptz NULL,
        missed       bigint      NOT NULL DEFAULT 0,
        created_at   timestamptz NOT NULL,
        updated_at   timestamptz NOT NULL,
        CONSTRAINT delay_schedule_one_rule CHECK ((cron IS NULL) <> (every_ms IS NULL))
      )`);
    await queryRunner.query(
      `CREATE INDEX delay_schedule_next_idx ON delay_schedule (next_at) WHERE NOT paused`,
    );
    await queryRunner.query(`
      ALTER TABLE delayed_task
        ADD COLUMN schedule_name text NULL,
        ADD COLUMN occurrence_at timestamptz NULL,
        ADD COLUMN previous_occurrence_at timestamptz NULL`);
    await queryRunner.query(`
      CREATE UNIQUE INDEX delayed_task_occurrence_idx ON delayed_task (schedule_name, occurrence_at)
      WHERE schedule_name IS NOT NULL`);
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS delayed_task_occurrence_idx`);
    await queryRunner.query(`
      ALTER TABLE delayed_task
        DROP COLUMN IF EXISTS schedule_name,
        DROP COLUMN IF EXISTS occurrence_at,
        DROP COLUMN IF EXISTS previous_occurrence_at`);
    await queryRunner.query(`DROP TABLE IF EXISTS delay_schedule`);
  }
}
