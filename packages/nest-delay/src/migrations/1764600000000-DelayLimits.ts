import type { DelayMigration, MigrationRunner } from './migration-runner.js';

/**
 * Version 9: shared limits. `delay_type_limit` holds a type's run-time pause
 * and limits, read by every claim; `delay_limit_credit` is a rate's ledger,
 * one row per start a window allows. Concurrency needs no table: its seats
 * are transaction-scoped advisory locks.
 */
export class DelayLimits1764600000000 implements DelayMigration {
  name = 'DelayLimits1764600000000';

  async up(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE delay_type_limit (
        type          text        PRIMARY KEY,
        paused_at     timestamptz NULL,
        overridden    boolean     NOT NULL DEFAULT false,
        concurrency   int         NULL CHECK (concurrency >= 1),
        rate_starts   int         NULL CHECK (rate_starts >= 1),
        rate_per_ms   bigint      NULL CHECK (rate_per_ms >= 1),
        updated_at    timestamptz NOT NULL,
        CONSTRAINT delay_type_limit_rate CHECK ((rate_starts IS NULL) = (rate_per_ms IS NULL))
      )`);
    await queryRunner.query(`
      CREATE TABLE delay_limit_credit (
        type      text        NOT NULL,
        key       text        NOT NULL,
        credit    int         NOT NULL,
        used_at   timestamptz NOT NULL,
        holder    text        NULL,
        PRIMARY KEY (type, key, credit)
      ) WITH (fillfactor = 70)`);
    // No index but the key: every start updates a credit twice, and an index
    // on used_at or holder would turn those HOT updates into index entries.
  }

  async down(queryRunner: MigrationRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE IF EXISTS delay_limit_credit`);
    await queryRunner.query(`DROP TABLE IF EXISTS delay_type_limit`);
  }
}
