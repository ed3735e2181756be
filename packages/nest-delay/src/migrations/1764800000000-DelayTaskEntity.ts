import type { MigrationInterface, QueryRunner } from 'typeorm';
import { lockTables } from './table-locks.js';

/**
 * Version 12: the entity a task belongs to (`schedule({ entity: 'order:42' })`),
 * so that every task of one business object can be found, cancelled or moved
 * at once without knowing each task's key.
 * - `delayed_task.entity`: nullable; at most 500 characters, as a key.
 * - `delayed_task_entity_idx` on (entity, id), partial on `entity IS NOT NULL`:
 *   "the tasks of this entity" reads one short range of it (pending ones are
 *   filtered among them: an entity has a handful of tasks, not thousands),
 *   and in id order, the order they were created in. Tasks without an entity
 *   (most of a burst) add nothing to it.
 *
 * Adding a nullable column without a default rewrites nothing. The index
 * is built in the migration's transaction; on a large table create it first
 * by hand with the same statement plus CONCURRENTLY, and IF NOT EXISTS makes
 * this a no-op.
 */
export class DelayTaskEntity1764800000000 implements MigrationInterface {
  name = 'DelayTaskEntity1764800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Claims queue behind a waiting ALTER: wait briefly, and try again (lockTables).
    await lockTables(queryRunner, ['delayed_task']);
    await queryRunner.query(`
      ALTER TABLE delayed_task
        ADD COLUMN IF NOT EXISTS entity text NULL
          CONSTRAINT delayed_task_entity_length CHECK (char_length(entity) BETWEEN 1 AND 500)`);
    await queryRunner.query(`
      CREATE INDEX IF NOT EXISTS delayed_task_entity_idx
      ON delayed_task (entity, id) WHERE entity IS NOT NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS delayed_task_entity_idx`);
    await queryRunner.query(`ALTER TABLE delayed_task DROP COLUMN IF EXISTS entity`);
  }
}
