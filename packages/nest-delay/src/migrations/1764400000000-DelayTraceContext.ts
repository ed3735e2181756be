import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/** Version 7: the W3C trace context a task was scheduled in, which its handler's span continues; null outside a span. */
export class DelayTraceContext1764400000000 implements DelayMigration {
  name = 'DelayTraceContext1764400000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE delayed_task ADD COLUMN IF NOT EXISTS trace_context jsonb NULL`,
    );
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delayed_task DROP COLUMN IF EXISTS trace_context`);
  }
}
