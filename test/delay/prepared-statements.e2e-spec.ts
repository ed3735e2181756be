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
 * No statement is prepared by name: a pooler in transaction mode hands each
 * transaction any server session, so nothing may rely on a session's
 * state. The `preparedStatements` option is deprecated and without effect.
 * Seen from inside a claim, on a pool of one (every claim on the session the
 * one before it used). On a server only: PGlite keeps one session for all.
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
}

@Module({ providers: [SessionHandlers] })
class SessionModule {}

describeWithServer('statements never prepared on a session', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  async function app(preparedStatements?: boolean): Promise<DelayTestApp> {
    return createDelayTestApp(
      { ...db, poolSize: 1 },
      { concurrency: 1, ...(preparedStatements === undefined ? {} : { preparedStatements }) },
      { modules: [{ module: SessionModule }], logger: new CapturingLogger() },
    );
  }

  it.each([undefined, true, false])(
    'claims leave no prepared statement behind (preparedStatements: %s)',
    async (preparedStatements) => {
      const t = await app(preparedStatements);
      try {
        SessionHandlers.seen = [];
        for (let i = 0; i < 3; i++) {
          await t.delay.schedule({ type: 'prepared.looks', payload: null, runAt: t.clock.now() });
          await t.tester.runDue();
        }
        expect(SessionHandlers.seen).toEqual([[], [], []]);
      } finally {
        await t.close();
      }
    },
  );

  it('still names a wrong value of the deprecated option', async () => {
    await expect(app('yes' as unknown as boolean).then((t) => t.close())).rejects.toThrow(
      /preparedStatements/,
    );
  });
});
