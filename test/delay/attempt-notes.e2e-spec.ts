import pg from 'pg';
import { DataSource } from 'typeorm';
import { delayMigrations, TaskOutcome, DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { Injectable, Module } from '@nestjs/common';
// Internal statements, driven directly to interleave two claims as two instances would.
import { recordAttempt } from '../../packages/nest-delay/src/store/attempt-statements.js';
import { claimTasks } from '../../packages/nest-delay/src/store/claim-statements.js';
import type { Sql } from '../../packages/nest-delay/src/store/sql.js';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { useDelayTestApp, recordEffect, type DelayTestApp } from './delay-test-app.js';

const sqlOf = (client: pg.PoolClient): Sql => ({
  rows: async <T>(text: string, params: unknown[]) =>
    (await client.query(text, params)).rows as T[],
});

describeWithServer('attempt notes of live claims', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    const dataSource = new DataSource({
      type: 'postgres',
      url: db.url,
      migrations: delayMigrations,
    });
    await dataSource.initialize();
    await dataSource.runMigrations();
    await dataSource.destroy();
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    // Idle clients are terminated when the database is dropped at the end.
    pool.on('error', () => undefined);
  });

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('are never charged: a claim that overlaps another, still running, defers or skips, and charges nothing', async () => {
    const [{ id }] = (
      await pool.query(
        `INSERT INTO delayed_task (type, due_at, max_attempts, created_at, updated_at)
         VALUES ('x', now() - interval '1 s', 1, now(), now()) RETURNING id`,
      )
    ).rows;
    const now = new Date();
    const first = await pool.connect();
    const second = await pool.connect();
    try {
      // Both noted the task (two drainers read the same page); the first has not claimed yet.
      const firstNote = await recordAttempt(sqlOf(first), 'one', [id], now);
      const secondNote = await recordAttempt(sqlOf(second), 'two', [id], now);
      // In a batch, a task another note lists is left for a claim of its own, uncharged.
      await second.query('BEGIN');
      expect(await claimTasks(sqlOf(second), [id], now, secondNote, false, 70_000)).toMatchObject([
        { id, claimed: false, attempts: 0, last_error: null },
      ]);
      await second.query('COMMIT');
      const soloNote = await recordAttempt(sqlOf(second), 'two', [id], now);
      await second.query('BEGIN');
      const claimed = await claimTasks(sqlOf(second), [id], now, soloNote, true, 70_000);
      await second.query('COMMIT');
      expect(claimed).toMatchObject([{ id, claimed: true, attempts: 1, last_error: null }]);
      await first.query('BEGIN');
      expect(await claimTasks(sqlOf(first), [id], now, firstNote, false, 70_000)).toEqual([]);
      await first.query('COMMIT');
      expect((await pool.query(`SELECT count(*)::int AS n FROM delay_attempt`)).rows[0].n).toBe(0);
    } finally {
      first.release();
      second.release();
    }
  });

  it('of a session that is gone are charged, once, by the next claim', async () => {
    const [{ id }] = (
      await pool.query(
        `INSERT INTO delayed_task (type, due_at, max_attempts, created_at, updated_at)
         VALUES ('x', now() - interval '1 s', 3, now(), now()) RETURNING id`,
      )
    ).rows;
    const now = new Date();
    const dying = new pg.Client({ connectionString: db.url });
    await dying.connect();
    await recordAttempt(
      { rows: async <T>(t: string, p: unknown[]) => (await dying.query(t, p)).rows as T[] },
      'dead',
      [id],
      now,
    );
    await dying.end(); // its process died: the note's lock goes with the session
    const next = await pool.connect();
    try {
      const note = await recordAttempt(sqlOf(next), 'next', [id], now);
      await next.query('BEGIN');
      const rows = await claimTasks(sqlOf(next), [id], now, note, false, 70_000);
      await next.query('COMMIT');
      expect(rows).toMatchObject([{ id, claimed: false, attempts: 1 }]);
      expect(rows[0].last_error).toMatch(/attempt 1 was cut off: instance dead/);
      const solo = await recordAttempt(sqlOf(next), 'next', [id], now);
      await next.query('BEGIN');
      expect(await claimTasks(sqlOf(next), [id], now, solo, true, 70_000)).toMatchObject([
        { id, claimed: true, attempts: 2 },
      ]);
      await next.query('ROLLBACK');
    } finally {
      next.release();
    }
  });
});

@Injectable()
class SwallowingHandlers {
  /** Hits a unique violation, swallows it, and asks for a discard: the transaction is aborted. */
  @DelayedTaskHandler('test.swallow-then-discard')
  async swallowThenDiscard(_payload: unknown, context: TaskContext) {
    await context.manager.query('SELECT * FROM no_such_table').catch(() => undefined);
    return TaskOutcome.discard('duplicate');
  }

  @DelayedTaskHandler('test.fine')
  async fine(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
  }
}

@Module({ providers: [SwallowingHandlers] })
class SwallowingModule {}

describe('a handler that swallows a database error, then returns an outcome', () => {
  const app = useDelayTestApp(
    { concurrency: 1, retry: { baseDelay: '10s', jitter: 0 } },
    { modules: [{ module: SwallowingModule }] },
  );
  let t: DelayTestApp;

  beforeAll(async () => {
    t = app.t;
  });

  it('fails that attempt alone; its batch-mates commit', async () => {
    const bad = await t.delay.schedule({ type: 'test.swallow-then-discard', delay: 0 });
    const good = await t.delay.schedule({ type: 'test.fine', delay: 0 });
    const report = await t.tester.runDue();
    expect(report.byType['test.fine']).toMatchObject({ executed: 1 });
    expect(report.byType['test.swallow-then-discard']).toMatchObject({ failed: 1 });
    expect(await t.effects(good.id)).toBe(1);
    const failed = await t.delay.get({ id: bad.id });
    expect(failed).toMatchObject({ state: 'pending', attempts: 1 });
    expect(failed!.lastError).toMatch(/left its transaction aborted/);
  });
});

describe('an instance id that needs quoting', () => {
  // The note is sent with the claim's BEGIN as one script, its values quoted in.
  const instanceId = `o'brien \\ "1"; DROP TABLE delayed_task; --`;
  const app = useDelayTestApp({ instanceId });

  it('notes and claims as any other: the task runs once under that id', async () => {
    const { t } = app;
    const task = await t.delay.schedule({ type: 'test.effect', delay: '1s' });
    const report = await t.tester.advance('1s');
    expect(report.executed).toBe(1);
    expect(await t.effects(task.id)).toBe(1);
    expect(await t.delay.get({ id: task.id })).toMatchObject({ state: 'executed' });
    // The lease row holds the exact id, and the table the script could have dropped is there.
    const rows = await t.query<{ id: string }>(`SELECT id FROM delay_instance WHERE id = $1`, [
      instanceId,
    ]);
    expect(rows).toEqual([{ id: instanceId }]);
  });
});
