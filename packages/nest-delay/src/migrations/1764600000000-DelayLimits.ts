import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Version 9: shared limits. `delay_type_limit` holds what was set at run
 * time for a task type (a pause, or limits that replace the handler's
 * declared ones), read by every claim, so a change holds for every instance
 * from its next claim. `delay_limit_credit` is a rate limit's ledger: one row
 * per start a window allows, stamped after each start (see limit-statements.ts).
 * Concurrency needs no table: its slots are transaction-scoped advisory locks.
 */
export class DelayLimits1764600000000 implements MigrationInterface {
  name = 'DelayLimits1764600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
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
    // No index but the key: every start updates a credit twice (taken,
    // stamped), and an index on used_at or holder would make each update a
    // new index entry instead of a HOT update within its page. The takeover's
    // search by holder reads the ledger, a few rows per limited key.
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE IF EXISTS delay_limit_credit`);
    await queryRunner.query(`DROP TABLE IF EXISTS delay_type_limit`);
  }
}
