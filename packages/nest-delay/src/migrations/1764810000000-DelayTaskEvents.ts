import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Version 13: the history behind an entity's timeline (DelayAdmin.timeline).
 * `delay_task_event` holds one row per state change of a task that has an
 * entity, written by the statement of the change itself (scheduled,
 * replaced, debounced, an attempt started, retried, snoozed, dead-lettered,
 * cancelled, rescheduled, revived), so it commits or rolls back with it.
 * Tasks without an entity write none: a burst of them pays nothing.
 *
 * One index, (entity, task_id): the timeline reads an entity's rows, and the
 * pruner deletes a pruned task's rows with it (by its entity and id).
 */
export class DelayTaskEvents1764810000000 implements MigrationInterface {
  name = 'DelayTaskEvents1764810000000';

  async up(queryRunner: QueryRunner): Promise<void> {
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

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE IF EXISTS delay_task_event`);
  }
}
