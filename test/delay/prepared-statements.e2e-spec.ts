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
        await t.delay.schedule({ type: 'prepared.looks', payload: null, runAt: t.clock.now() });
        await t.tester.runDue();
        expect(SessionHandlers.seen).toEqual([
          prepared === false ? [] : ['nest_delay_claim_script', 'nest_delay_note'],
        ]);
      } finally {
        await t.close();
      }
    }
  });

  it('claims again at once, unprepared, when the session lost the statement, and says so once', async () => {
    const logger = new CapturingLogger();
    const t = await app(logger);
    try {
      const forgets = await t.delay.schedule({
        type: 'prepared.forgets',
        payload: null,
        runAt: t.clock.now(),
      });
      await t.tester.runDue();
      expect(await t.effects(forgets.id)).toBe(1);

      // Its claim's Bind finds no statement: redone at once (the clock never moves), not a tick later.
      SessionHandlers.seen = [];
      const next = await t.delay.schedule({
        type: 'prepared.looks',
        payload: null,
        runAt: t.clock.now(),
      });
      await t.tester.runDue();
      expect(await t.effects(next.id)).toBe(1);
      // The claim that failed counted no attempt; the one that ran sent its statement unprepared.
      expect(await attemptsOf(t, next.id)).toBe(1);
      expect(SessionHandlers.seen).toEqual([[]]);

      const later = await t.delay.schedule({
        type: 'prepared.looks',
        payload: null,
        runAt: t.clock.now(),
      });
      await t.tester.runDue();
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
