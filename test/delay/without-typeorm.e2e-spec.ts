import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import pg from 'pg';
import {
  DelayModule,
  DelayService,
  DelayedTaskHandler,
  delayMigrations,
  migrateDelaySchema,
  type TaskContext,
} from 'nest-delay';
import { DelayTester, ManualClock, useManualClock } from 'nest-delay/testing';
import { pgTransaction } from 'nest-delay/pg';
import {
  adminUrl,
  behindPooler,
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';
import { bindingCases, pgBinding, useBindingApp } from './binding-cases.js';

/**
 * DelayModule with no TypeORM in the app: its schema from
 * migrateDelaySchema, its work on the `connection` option's pool, the
 * caller's transaction and the handler's through nest-delay/pg.
 */
describeWithServer('DelayModule without TypeORM (its connection option)', () => {
  describe('the binding cases on the engine’s own pool', () => {
    const fixture = useBindingApp(pgBinding, {}, { withoutTypeorm: true });
    bindingCases(fixture);
  });

  describe('migrateDelaySchema', () => {
    let db: TestDatabase;
    beforeEach(async () => (db = await createTestDatabase()));
    afterEach(() => db.drop());

    it('runs every migration once, records them, and is a no-op the second time, even from callers at once', async () => {
      const names = delayMigrations.map((m) => m.name);
      const pool = new pg.Pool({ connectionString: db.url, max: 4 });
      try {
        const [first, second] = await Promise.all([
          migrateDelaySchema(pool),
          migrateDelaySchema(db.url),
        ]);
        // Between the two, each migration ran once, in order (a lock per migration: they may share the work).
        expect([...first, ...second].sort()).toEqual([...names].sort());
        expect(await migrateDelaySchema(pool)).toEqual([]);
        const { rows } = await pool.query(`SELECT name FROM delay_migrations ORDER BY id`);
        expect(rows.map((row) => row.name)).toEqual(names);
        const tables = await pool.query(
          `SELECT count(*)::int AS n FROM pg_tables WHERE tablename IN ('delayed_task', 'delay_instance', 'delay_schedule')`,
        );
        expect(tables.rows[0].n).toBe(3);
      } finally {
        await pool.end();
      }
    });

    it('runs only what its table lacks, and refuses a table name it would have to quote', async () => {
      const pool = new pg.Pool({ connectionString: db.url, max: 2 });
      try {
        await migrateDelaySchema(pool);
        await pool.query(`DELETE FROM delay_migrations WHERE name = $1`, [
          delayMigrations.at(-1)!.name,
        ]);
        expect(await migrateDelaySchema(pool)).toEqual([delayMigrations.at(-1)!.name]);
        await expect(migrateDelaySchema(pool, { table: 'Bad-Name' })).rejects.toThrow(
          /table must be a plain lower-case name/,
        );
      } finally {
        await pool.end();
      }
    });
  });

  describe('booting', () => {
    let db: TestDatabase;
    beforeEach(async () => (db = await createTestDatabase()));
    afterEach(() => db.drop());

    @Injectable()
    class ManagerReader {
      seen: unknown;
      @DelayedTaskHandler('reads.manager')
      read(_payload: unknown, context: TaskContext) {
        try {
          void context.manager;
        } catch (error) {
          this.seen = error;
        }
      }
    }
    @Module({ providers: [ManagerReader] })
    class ReaderModule {}

    const boot = (connection: string | pg.Pool) =>
      useManualClock(
        Test.createTestingModule({
          imports: [DelayModule.forRoot({ connection }), ReaderModule as unknown as DynamicModule],
        }),
        new ManualClock(),
      ).compile();

    it('on an unmigrated database, stops with an error naming the command to run', async () => {
      const moduleRef = await boot(db.url);
      await expect(moduleRef.init()).rejects.toThrow(/npx nest-delay migrate/);
      await moduleRef.close();
    });

    it('on a connection string, opens its own pool and ends it at close; context.manager names what to use', async () => {
      await migrateDelaySchema(db.url);
      const moduleRef = await boot(db.url);
      await moduleRef.init();
      const watch = new pg.Client({ connectionString: db.url });
      await watch.connect();
      const sessions = async () =>
        (
          await watch.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
          )
        ).rows[0].n;
      try {
        const delay = moduleRef.get(DelayService);
        const tester = DelayTester.for(moduleRef);
        await watch.query('BEGIN');
        const task = await delay.schedule(
          { type: 'reads.manager', delay: 0 },
          { transaction: pgTransaction(watch) },
        );
        await watch.query('COMMIT');
        await tester.refresh();
        await tester.runDue();
        const { rows } = await watch.query(`SELECT executed_at FROM delayed_task WHERE id = $1`, [
          task.id,
        ]);
        expect(rows[0].executed_at).toBeInstanceOf(Date);
        expect(String(moduleRef.get(ManagerReader).seen)).toMatch(
          /context.manager is a TypeORM EntityManager.*context.sql or context.client/,
        );
        // Behind a pooler the server's sessions are the pooler's, kept after
        // the app's clients leave: the pool's own sessions show only on the server.
        if (!behindPooler) expect(await sessions()).toBeGreaterThan(0);
        await moduleRef.close();
        // A server process leaves pg_stat_activity a moment after its client said goodbye.
        for (let tries = 0; !behindPooler && tries < 100 && (await sessions()) > 0; tries++)
          await new Promise((resolve) => setTimeout(resolve, 50));
        if (!behindPooler) expect(await sessions()).toBe(0);
      } finally {
        await watch.end();
      }
    });

    it('on a connection string, lives through its idle connections being ended by the server', async () => {
      await migrateDelaySchema(db.url);
      const moduleRef = await boot(db.url);
      await moduleRef.init();
      const watch = new pg.Client({ connectionString: adminUrl });
      await watch.connect();
      try {
        const tester = DelayTester.for(moduleRef);
        await tester.runDue();
        // Every session of the engine's pool ended, as a restart or a proxy would.
        await watch.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE datname = $1 AND pid <> pg_backend_pid()`,
          [new URL(db.url).pathname.slice(1)],
        );
        await new Promise((resolve) => setTimeout(resolve, 200));
        const task = await moduleRef
          .get(DelayService)
          .schedule({ type: 'reads.manager', delay: 0 });
        await tester.runDue();
        expect(await moduleRef.get(DelayService).get({ id: task.id })).toMatchObject({
          state: 'executed',
        });
      } finally {
        await watch.end();
        await moduleRef.close();
      }
    });

    it('on a pool the app gives, leaves it open at close', async () => {
      await migrateDelaySchema(db.url);
      const pool = new pg.Pool({ connectionString: db.url, max: 4 });
      const moduleRef = await boot(pool);
      await moduleRef.init();
      await moduleRef.close();
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await pool.end();
    });

    it('refuses a connection that is neither a pool nor a postgres URL, naming the option', () => {
      expect(() => DelayModule.forRoot({ connection: 'mysql://u:secret@h/db' })).not.toThrow();
      return expect(
        useManualClock(
          Test.createTestingModule({
            imports: [DelayModule.forRoot({ connection: 'mysql://u:secret@h/db' })],
          }),
          new ManualClock(),
        ).compile(),
      ).rejects.toThrow(
        /option connection must be a pg Pool or a postgres:\/\/ connection string; got "mysql:\/\/u:\*\*\*@h\/db"/,
      );
    });
  });
});
