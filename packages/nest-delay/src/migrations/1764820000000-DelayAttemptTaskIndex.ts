import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Version 14: attempt notes found by the tasks they list. Every claim of a
 * batch asks whether another note lists one of its tasks (`task_ids && …`),
 * and a task claimed alone looks for the orphaned notes that list it. Without
 * an index that question was a sequential scan of `delay_attempt`, a table
 * that gains and loses a row per claim: between two vacuums (or for as long
 * as a forgotten transaction holds vacuum back) the scan read every dead
 * note, and at 1,000 tasks a second it was most of the server's time for a
 * claim (bench/HISTORY.md, "The claim that read every dead note").
 *
 * GIN without `fastupdate`: a pending list would be read whole by every
 * claim, which is the scan again; a note's two or three ids go straight into
 * the tree instead, and a delete touches no index.
 */
export class DelayAttemptTaskIndex1764820000000 implements MigrationInterface {
  name = 'DelayAttemptTaskIndex1764820000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE INDEX IF NOT EXISTS delay_attempt_task_ids_idx ON delay_attempt
      USING gin (task_ids) WITH (fastupdate = off)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS delay_attempt_task_ids_idx`);
  }
}
