import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Version 7: the W3C trace context a task was scheduled in, which its handler's span continues; null outside a span. */
export class DelayTraceContext1764400000000 implements MigrationInterface {
  name = 'DelayTraceContext1764400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE delayed_task ADD COLUMN IF NOT EXISTS trace_context jsonb NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delayed_task DROP COLUMN IF EXISTS trace_context`);
  }
}
