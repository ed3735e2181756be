import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Version 3: attempts that never reached their commit.
 *
 * A claim transaction that dies with its process (exit, out of memory, a kill)
 * or is cut off (a handler past its timeout) rolls back everything, its
 * attempt count included. `delay_attempt` keeps, outside that transaction,
 * which tasks a claim is about to run, under a session advisory lock that
 * says the claim is alive; the claim deletes its row when it commits, so a
 * row that stays, unlocked, names tasks whose attempt was cut off. The
 * next claim of such a task charges it the attempt and flags it
 * `interrupted_at`, and a flagged task runs alone, so a task that kills its
 * process cannot take its batch-mates down again, and is dead-lettered after
 * maxAttempts. The table holds a row per claim in flight, and is scanned as such.
 */
export class DelayAttempts1764000000000 implements MigrationInterface {
  name = 'DelayAttempts1764000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE delayed_task ADD COLUMN interrupted_at timestamptz NULL`);
    await queryRunner.query(`
      CREATE TABLE delay_attempt (
        id          bigserial   PRIMARY KEY,
        instance_id text        NOT NULL,
        task_ids    bigint[]    NOT NULL,
        started_at  timestamptz NOT NULL,
        recorded_at timestamptz NOT NULL
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE delay_attempt`);
    await queryRunner.query(`ALTER TABLE delayed_task DROP COLUMN interrupted_at`);
  }
}
