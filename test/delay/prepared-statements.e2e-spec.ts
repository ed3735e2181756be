import { Injectable, Module } from '@nestjs/common';
import { DelayedTaskHandler, type TaskContext } from 'nest-delay';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import {
  CapturingLogger,
  createDelayTestApp,
  recordEffect,
  type DelayTestApp,
} from './delay-test-app.js';

/**
 * The claim's statement is prepared once per session (planning it cost
 * Postgres more than running it for a few tasks). Behind a pooler in
 * transaction mode a claim may land on a session that never prepared it:
 * simulated here on one session by deallocating it from a handler, so the
 * next claim's Bind finds nothing, as it would on another server session.
 * On a server only: PGlite keeps one session for every connection.
 */
@Injectable()
class SessionHandlers {
  /** What the claim's session holds prepared, seen from inside the claim. */
  static seen: string[][] = [];

  @DelayedTaskHandler('prepared.looks')
  async looks(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    const rows: Array<{ name: string }> = await context.manager.query(
      `SELECT name FROM pg_prepared_statements ORDER BY name`,
    );
    SessionHandlers.seen.push(rows.map((r) => r.name));
  }

  /**
   * Its session gets another release's claim statement, prepared under the
   * name the claim's statement has (nest_delay_claim_script), as a pooler's
   * shared session would: it takes the claim's parameters and claims nothing.
   */
  @DelayedTaskHandler('prepared.other-release')
  async otherRelease(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    const held: unknown[] = await context.manager.query(
      `SELECT 1 FROM pg_prepared_statements WHERE name = 'nest_delay_claim_script'`,
    );
    if (held.length > 0) await context.manager.query('DEALLOCATE nest_delay_claim_script');
    await context.manager.query(
      `PREPARE nest_delay_claim_script (bigint[], timestamptz, bigint, boolean, int, text, text[])
       AS SELECT NULL::bigint AS id WHERE false`,
    );
  }

  /** Its session forgets every prepared statement, as a pooler's next session would not have them. */
  @DelayedTaskHandler('prepared.forgets')
  async forgets(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    await context.manager.query('DEALLOCATE ALL');
  }
}

@Module({ providers: [SessionHandlers] })
class SessionModule {}

describeWithServer('prepared claims', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  /** One connection: every claim is on the session the handler before it used. */
  async function app(logger: CapturingLogger, preparedStatements?: boolean): Promise<DelayTestApp> {
    return createDelayTestApp(
      { ...db, poolSize: 1 },
      { concurrency: 1, ...(preparedStatements === undefined ? {} : { preparedStatements }) },
      { modules: [{ module: SessionModule }], logger },
    );
  }

  /** Schedules a task of `type` due now and runs what is due. */
  async function runNow(t: DelayTestApp, type: string) {
    const task = await t.delay.schedule({ type, payload: null, runAt: t.clock.now() });
    await t.tester.runDue();
    return task;
  }

  async function attemptsOf(t: DelayTestApp, id: string): Promise<number> {
    const [row] = await t.query<{ attempts: number }>(
      `SELECT attempts FROM delayed_task WHERE id = $1`,
      [id],
    );
    return row.attempts;
  }

  it('prepares the claim by default, and not with preparedStatements: false', async () => {
    for (const prepared of [undefined, false]) {
      SessionHandlers.seen = [];
      const t = await app(new CapturingLogger(), prepared);
      try {
        await runNow(t, 'prepared.looks');
        // Each name carries a hash of its text (statementName).
        expect(SessionHandlers.seen).toEqual([
          prepared === false
            ? []
            : [
                expect.stringMatching(/^nest_delay_claim_script_[0-9a-f]{8}$/),
                expect.stringMatching(/^nest_delay_note_[0-9a-f]{8}$/),
              ],
        ]);
      } finally {
        await t.close();
      }
    }
  });

  it("never runs another release's statement of the same name: the name carries its text's hash", async () => {
    const logger = new CapturingLogger();
    const t = await app(logger);
    try {
      const other = await runNow(t, 'prepared.other-release');
      expect(await t.effects(other.id)).toBe(1);

      // Claimed by this release's statement, on the session that holds the other's.
      const next = await runNow(t, 'prepared.looks');
      expect(await t.effects(next.id)).toBe(1);
      expect(await attemptsOf(t, next.id)).toBe(1);
      expect(logger.messages('error')).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('claims again at once, unprepared, when the session lost the statement, and says so once', async () => {
    const logger = new CapturingLogger();
    const t = await app(logger);
    try {
      const forgets = await runNow(t, 'prepared.forgets');
      expect(await t.effects(forgets.id)).toBe(1);

      // Its claim's Bind finds no statement: redone at once (the clock never moves), not a tick later.
      SessionHandlers.seen = [];
      const next = await runNow(t, 'prepared.looks');
      expect(await t.effects(next.id)).toBe(1);
      // The claim that failed counted no attempt; the one that ran sent its statement unprepared.
      expect(await attemptsOf(t, next.id)).toBe(1);
      expect(SessionHandlers.seen).toEqual([[]]);

      const later = await runNow(t, 'prepared.looks');
      expect(await t.effects(later.id)).toBe(1);

      const warnings = logger
        .messages('warn')
        .filter((m) => m.includes('preparedStatements: false'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain('26000');
      expect(logger.messages('error')).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
