import pg from 'pg';
import { DataSource } from 'typeorm';
import { delayMigrations } from 'nest-delay';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';

// The migrations a release after DelayLimits (version 9) brings run while
// instances of the previous release go on claiming and planning. A claim
// locks delayed_task and then reads delay_schedule; the planner locks a
// schedule and then inserts into delayed_task. Version 10 alters both
// tables: it must deadlock with neither (see lockTables).
const PREVIOUS = delayMigrations.findIndex((m) => m.name === 'DelayLimits1764600000000') + 1;

describeWithServer('migrations beside the previous release', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  const migrate = async (migrations: typeof delayMigrations) => {
    const dataSource = new DataSource({
      type: 'postgres',
      url: db.url,
      migrations,
      migrationsTransactionMode: 'each',
    });
    await dataSource.initialize();
    try {
      await dataSource.runMigrations();
    } finally {
      await dataSource.destroy();
    }
  };

  /** Resolves once another session waits for a lock (the migration, queued behind `holder`). */
  const someoneWaits = async (holder: pg.PoolClient) => {
    const [{ pid }] = (await holder.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows;
    for (let i = 0; i < 200; i++) {
      const { rows } = await pool.query<{ n: number }>(
        // This database's waits only: pg_locks lists every database's.
        `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND pid <> $1
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        [pid],
      );
      if (rows[0].n > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the migration never waited for a lock');
  };

  beforeEach(async () => {
    db = await createTestDatabase();
    await migrate(delayMigrations.slice(0, PREVIOUS));
    pool = new pg.Pool({ connectionString: db.url, max: 4 });
    pool.on('error', () => undefined);
    await pool.query(
      `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
       VALUES ('old.claim', 'null', now(), now(), now())`,
    );
    await pool.query(
      `INSERT INTO delay_schedule (name, type, every_ms, catch_up, catch_up_cap, overlap, in_code,
                                   next_at, created_at, updated_at)
       VALUES ('old.plan', 'old.plan', 60000, 'one', 1, 'allow', true, now(), now(), now())`,
    );
  });

  afterEach(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('a claim holding delayed_task that then reads delay_schedule: both finish, no deadlock', async () => {
    const claim = await pool.connect();
    try {
      await claim.query('BEGIN');
      await claim.query(`UPDATE delayed_task SET updated_at = now() WHERE type = 'old.claim'`);
      const migrating = migrate(delayMigrations);
      await someoneWaits(claim);
      // The previous release's claim goes on to read the schedules.
      await claim.query(`SELECT count(*) FROM delay_schedule`);
      await claim.query('COMMIT');
      await migrating;
    } finally {
      claim.release();
    }
    const { rows } = await pool.query<{ name: string }>(`SELECT name FROM migrations ORDER BY id`);
    expect(rows.map((row) => row.name)).toEqual(delayMigrations.map((m) => m.name));
  });

  it('a plan holding a schedule that then inserts tasks: both finish, no deadlock', async () => {
    const plan = await pool.connect();
    try {
      await plan.query('BEGIN');
      await plan.query(`SELECT name FROM delay_schedule WHERE name = 'old.plan' FOR UPDATE`);
      const migrating = migrate(delayMigrations);
      await someoneWaits(plan);
      await plan.query(
        `INSERT INTO delayed_task (type, payload, due_at, created_at, updated_at)
         VALUES ('old.plan', 'null', now(), now(), now())`,
      );
      await plan.query('COMMIT');
      await migrating;
    } finally {
      plan.release();
    }
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task WHERE type = 'old.plan'`,
    );
    expect(rows[0].n).toBe(1);
  });
});
