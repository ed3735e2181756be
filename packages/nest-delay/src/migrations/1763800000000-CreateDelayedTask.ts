import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/**
 * `delayed_task`, the truth behind the wheels: `executed_at` commits with the
 * handler's effects, which makes them happen once. `delay_instance` holds one
 * lease row per instance, renewed instead of every leased task's row.
 */
export class CreateDelayedTask1763800000000 implements DelayMigration {
  name = 'CreateDelayedTask1763800000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE delayed_task (
        id            bigserial PRIMARY KEY,
        type          text        NOT NULL CHECK (char_length(type) BETWEEN 1 AND 200),
        key           text        NULL     CHECK (char_length(key) BETWEEN 1 AND 500),
        payload       jsonb       NULL,
        due_at        timestamptz NOT NULL,
        executed_at   timestamptz NULL,
        cancelled_at  timestamptz NULL,
        dead_at       timestamptz NULL,
        attempts      integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        max_attempts  integer     NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
        last_error    text        NULL,
        locked_by     text        NULL,
        locked_at     timestamptz NULL,
        created_at    timestamptz NOT NULL,
        updated_at    timestamptz NOT NULL
      )`);
    // "What is due next": every pending task in due order (keyset paging, scans).
    await queryRunner.query(`
      CREATE INDEX delayed_task_pending_due_idx ON delayed_task (due_at, id)
      WHERE executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`);
    // What no instance holds yet: the loader's query stays cheap however many
    // pending tasks are already leased.
    await queryRunner.query(`
      CREATE INDEX delayed_task_unleased_due_idx ON delayed_task (due_at, id)
      WHERE executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL AND locked_by IS NULL`);
    // Releasing an instance's leases (at its stop, or a takeover).
    await queryRunner.query(`
      CREATE INDEX delayed_task_locked_by_idx ON delayed_task (locked_by)
      WHERE executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL AND locked_by IS NOT NULL`);
    // One pending task per business key; executed, cancelled and dead-lettered
    // tasks keep their key for the record without blocking a new one.
    await queryRunner.query(`
      CREATE UNIQUE INDEX delayed_task_pending_key_uq ON delayed_task (key)
      WHERE key IS NOT NULL AND executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`);
    await queryRunner.query(
      `CREATE INDEX delayed_task_key_idx ON delayed_task (key, id) WHERE key IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX delayed_task_dead_idx ON delayed_task (dead_at) WHERE dead_at IS NOT NULL`,
    );
    await queryRunner.query(`
      CREATE TABLE delay_instance (
        id           text        PRIMARY KEY,
        started_at   timestamptz NOT NULL,
        heartbeat_at timestamptz NOT NULL,
        lease_until  timestamptz NOT NULL
      )`);
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE delay_instance`);
    await queryRunner.query(`DROP TABLE delayed_task`);
  }
}
