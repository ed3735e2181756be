import type { MigrationInterface, QueryRunner } from 'typeorm';
import { lockTables } from './table-locks.js';

/**
 * Version 15: attempt notes written without the write-ahead log. A note
 * lives from a claim's BEGIN to its COMMIT, and matters only if the app
 * dies while Postgres lives on; if Postgres itself crashes, the claims die
 * with it and there is nothing to charge (the claim already ignores notes
 * recorded before the server last started). An unlogged table is emptied
 * by crash recovery and not copied to standbys, which is exactly that rule;
 * a clean restart keeps it. So its two writes a claim (the note and the
 * claim's delete of it), its index entries and their full-page images no
 * longer go through the WAL, to disk and to every replica.
 *
 * The id sequence stays logged: after a crash an unlogged one would start
 * again from 1, and an instance that lived through the crash, still holding
 * ids it reserved before (NoteIds), could write a note under an id given
 * out again, and wait on its lock. Postgres 15 made a serial's sequence
 * follow its table's persistence; before 15 a sequence is always logged.
 */
export class DelayAttemptUnlogged1764830000000 implements MigrationInterface {
  name = 'DelayAttemptUnlogged1764830000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    // Every claim writes a note first: wait briefly for it, and try again (lockTables).
    await lockTables(queryRunner, ['delay_attempt']);
    await queryRunner.query(`ALTER TABLE delay_attempt SET UNLOGGED`);
    await queryRunner.query(KEEP_SEQUENCE_LOGGED);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
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
