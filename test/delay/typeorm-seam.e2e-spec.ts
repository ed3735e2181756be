import { DataSource, type EntitySubscriberInterface, type TransactionCommitEvent } from 'typeorm';
import { delayMigrations } from 'nest-delay';
import { Database } from '../../packages/nest-delay/src/store/sql.js';
import {
  broadcast,
  claimConnection,
  pgClientOf,
  pgPoolOf,
  setTransactionState,
  transactionDepth,
} from '../../packages/nest-delay/src/store/claim-connection.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

// Each test names one thing nest-delay relies on in TypeORM or pg beyond
// their public API (store/claim-connection.ts). When an upgrade changes one,
// the test that fails says which.

describe('the TypeORM and pg internals nest-delay relies on', () => {
  let db: TestDatabase;
  let dataSource: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = new DataSource({
      type: 'postgres',
      url: db.url,
      migrations: delayMigrations,
      poolSize: db.poolSize,
    });
    await dataSource.initialize();
    await dataSource.runMigrations();
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it("driver.master is pg's pool: query, on('connect') and its _clients list", async () => {
    const pool = pgPoolOf(dataSource);
    expect(pool).toBeDefined();
    expect(typeof pool!.query).toBe('function');
    expect(typeof pool!.on).toBe('function');
    expect(Array.isArray(pool!._clients)).toBe(true);
    const [row] = (await pool!.query('SELECT 1 AS one', undefined)).rows as Array<{ one: number }>;
    expect(row.one).toBe(1);
  });

  it("a QueryRunner's connect() resolves to the very pg client it runs on", async () => {
    const runner = dataSource.createQueryRunner();
    try {
      const client = await pgClientOf(runner);
      const pid = 'SELECT pg_backend_pid() AS pid';
      const viaClient = ((await client.query(pid, undefined)) as { rows: unknown[] }).rows;
      expect(await runner.query(pid)).toEqual(viaClient);
      expect(typeof client.escapeLiteral).toBe('function');
    } finally {
      await runner.release();
    }
  });

  it('TypeORM keeps isTransactionActive and transactionDepth as its transactions nest', async () => {
    const runner = dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      expect([runner.isTransactionActive, transactionDepth(runner)]).toEqual([true, 1]);
      await runner.startTransaction();
      expect(transactionDepth(runner)).toBe(2);
      await runner.commitTransaction();
      expect([runner.isTransactionActive, transactionDepth(runner)]).toEqual([true, 1]);
      await runner.commitTransaction();
      expect([runner.isTransactionActive, transactionDepth(runner)]).toEqual([false, 0]);
    } finally {
      await runner.release();
    }
  });

  it('TypeORM reads that state: a transaction begun behind its back then nests and commits through it', async () => {
    const runner = dataSource.createQueryRunner();
    try {
      const client = await pgClientOf(runner);
      await client.query('BEGIN', undefined);
      setTransactionState(runner, true, 1);
      // TypeORM sees a transaction under way: a savepoint, not a second BEGIN.
      await runner.startTransaction();
      await runner.query('CREATE TEMP TABLE seam_probe (n int)');
      await runner.rollbackTransaction();
      expect(await runner.query(`SELECT to_regclass('pg_temp.seam_probe') AS t`)).toEqual([
        { t: null },
      ]);
      await runner.commitTransaction();
      expect(runner.isTransactionActive).toBe(false);
      // And after the state closed behind its back, it begins afresh.
      await runner.startTransaction();
      expect(transactionDepth(runner)).toBe(1);
      await runner.rollbackTransaction();
    } finally {
      await runner.release();
    }
  });

  it("runner.broadcaster delivers the transaction events to the DataSource's subscribers", async () => {
    const heard: string[] = [];
    const subscriber: EntitySubscriberInterface = {
      afterTransactionCommit: (event: TransactionCommitEvent) => {
        heard.push(`commit:${event.queryRunner === runner}`);
      },
      afterTransactionRollback: () => {
        heard.push('rollback');
      },
    };
    dataSource.subscribers.push(subscriber);
    const runner = dataSource.createQueryRunner();
    try {
      await broadcast(runner, 'AfterTransactionCommit');
      await broadcast(runner, 'AfterTransactionRollback');
      expect(heard).toEqual(['commit:true', 'rollback']);
    } finally {
      dataSource.subscribers.splice(dataSource.subscribers.indexOf(subscriber), 1);
      await runner.release();
    }
  });

  it("a claim connection's commit says whether Postgres committed; an aborted transaction stays open for restart", async () => {
    const connection = await claimConnection(Database.onDataSource(dataSource));
    try {
      await connection.begin('', 60_000);
      expect(connection.runner!.isTransactionActive).toBe(true);
      expect(await connection.commit('SELECT 1')).toBe(true);
      expect(connection.runner!.isTransactionActive).toBe(false);
      await connection.begin('', 60_000);
      await connection.sql.rows('SELECT * FROM no_such_table', []).catch(() => undefined);
      expect(await connection.commit('SELECT 1')).toBe(false);
      // Still open (aborted): restart rolls it back and begins anew in one message.
      expect(connection.runner!.isTransactionActive).toBe(true);
      await connection.restart(60_000);
      expect(await connection.commit('SELECT 1')).toBe(true);
      expect(connection.runner!.isTransactionActive).toBe(false);
    } finally {
      await connection.release();
    }
  });
});
