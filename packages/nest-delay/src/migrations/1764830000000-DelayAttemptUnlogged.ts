import type { DelayMigration, MigrationRunner } from './migration-runner.js';
import { lockTables } from './table-locks.js';

/**
 * Version 15: `delay_attempt` unlogged. A note matters only while Postgres
 * lives (after its crash the claims died too, and notes from before the
 * server's start are ignored), which is what crash recovery emptying an
 * unlogged table gives; its churn stays out of the WAL. The id sequence stays
 * logged: restarting from 1 after a crash, it would hand out ids a surviving
 * instance still holds in its reserved block.
 */
export class DelayAttemptUnlogged1764830000000 implements DelayMigration {
  name = 'DelayAttemptUnlogged1764830000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    // Every claim writes a note first: wait briefly for it, and try again (lockTables).
    await lockTables(queryRunner, ['delay_attempt']);
    await queryRunner.query(`ALTER TABLE delay_attempt SET UNLOGGED`);
    await queryRunner.query(KEEP_SEQUENCE_LOGGED);
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delay_attempt SET LOGGED`);
    await queryRunner.query(KEEP_SEQUENCE_LOGGED);
  }
}

const KEEP_SEQUENCE_LOGGED = `
  DO $$
  BEGIN
    IF current_setting('server_version_num')::int >= 150000 THEN
      EXECUTE format('ALTER SEQUENCE %s SET LOGGED', pg_get_serial_sequence('delay_attempt', 'id'));
    END IF;
  END $$`;
