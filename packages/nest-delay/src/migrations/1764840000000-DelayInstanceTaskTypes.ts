import type { MigrationInterface, QueryRunner } from 'typeorm';
import { lockTables } from './table-locks.js';

/**
 * Version 16: each instance says which task types it has handlers for
 * (`delay_instance.task_types`, written by its heartbeat), so an instance
 * can tell that a task waits because no live instance can run it. Null: an
 * instance of an earlier release, which does not say (counted as running
 * every type). Adding a nullable column without a default rewrites nothing:
 * its lock on delay_instance lasts a moment, and a heartbeat of the previous
 * release, which names its columns, goes on working beside it.
 */
export class DelayInstanceTaskTypes1764840000000 implements MigrationInterface {
  name = 'DelayInstanceTaskTypes1764840000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await lockTables(queryRunner, ['delay_instance']);
    await queryRunner.query(`ALTER TABLE delay_instance ADD COLUMN IF NOT EXISTS task_types text[]`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delay_instance DROP COLUMN IF EXISTS task_types`);
  }
}
