import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/**
 * Version 13: `delay_task_event`, one row per state change of a task with an
 * entity, written by the change's own statement. One index, (entity,
 * task_id), for the timeline and the pruner.
 */
export class DelayTaskEvents1764810000000 implements DelayMigration {
  name = 'DelayTaskEvents1764810000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE delay_task_event (
        id          bigserial   PRIMARY KEY,
        task_id     bigint      NOT NULL,
        entity      text        NOT NULL,
        at          timestamptz NOT NULL,
        event       text        NOT NULL,
        attempt     int         NULL,
        due_at      timestamptz NULL,
        duration_ms int         NULL,
        detail      text        NULL,
        trace_id    text        NULL,
        instance    text        NULL
      )`);
    await queryRunner.query(
      `CREATE INDEX delay_task_event_entity_idx ON delay_task_event (entity, task_id)`,
    );
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE IF EXISTS delay_task_event`);
  }
}
