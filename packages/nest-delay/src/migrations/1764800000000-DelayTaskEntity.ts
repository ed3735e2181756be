import type { DelayMigration, MigrationRunner } from './migration-runner.js';
import { lockTables } from './table-locks.js';

/**
 * Version 12: the entity a task belongs to, and a partial index on (entity,
 * id): an entity's tasks are one short range, in creation order, and tasks
 * without one add nothing. The column rewrites nothing; on a large table
 * create the index first by hand with CONCURRENTLY (IF NOT EXISTS then skips it).
 */
export class DelayTaskEntity1764800000000 implements DelayMigration {
  name = 'DelayTaskEntity1764800000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
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

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS delayed_task_entity_idx`);
    await queryRunner.query(`ALTER TABLE delayed_task DROP COLUMN IF EXISTS entity`);
  }
}
