import { spawn } from 'node:child_process';
import { DataSource } from 'typeorm';
import { delayMigrations } from 'nest-delay';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';

/**
 * A task whose handler kills its process (here `process.exit`, in production
 * an out-of-memory or a native crash) among 99 healthy ones, run by real
 * processes on the built package, restarted after each death the way a
 * supervisor would, each with a new instance id and a 3 s lease. The claim
 * that dies rolls back, so the attempt is counted outside it (delay_attempt):
 * the poison task must end dead-lettered after its maxAttempts, and its
 * batch-mates must each run exactly once instead of dying with it.
 */
const MAX_ATTEMPTS = 3;
const TASKS = 100;
const POISON = 37;

function runWorker(url: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['test/fixtures/poison-worker.mjs'], {
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', DATABASE_URL: url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`worker still running after 60 s:\n${output}`));
    }, 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describeWithServer('a task that kills its process', () => {
  let db: TestDatabase;
  let dataSource: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = new DataSource({
      type: 'postgres',
      url: db.url,
      migrations: delayMigrations,
      migrationsTransactionMode: 'each',
    });
    await dataSource.initialize();
    await dataSource.runMigrations();
    await dataSource.query(`CREATE TABLE poison_effect (task_id bigint NOT NULL)`);
    await dataSource.query(
      `INSERT INTO delayed_task (type, payload, due_at, max_attempts, created_at, updated_at)
       SELECT 'poison.work', jsonb_build_object('n', n, 'poison', n = $1), now(), $2, now(), now()
       FROM generate_series(1, $3) AS n`,
      [POISON, MAX_ATTEMPTS, TASKS],
    );
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('is dead-lettered after maxAttempts deaths, and every other task runs exactly once', async () => {
    const exits: Array<number | null> = [];
    let output = '';
    while (exits.length < MAX_ATTEMPTS + 3) {
      const run = await runWorker(db.url);
      exits.push(run.code);
      output = run.output;
      if (run.code === 0) break;
    }
    if (exits.at(-1) !== 0)
      throw new Error(`the worker never finished; its last output:\n${output}`);
    // One death per attempt, then a clean run that dead-letters it without running it.
    expect(exits).toEqual([...Array(MAX_ATTEMPTS).fill(3), 0]);

    const effects = await dataSource.query(
      `SELECT count(*)::int AS runs, count(DISTINCT task_id)::int AS tasks FROM poison_effect`,
    );
    expect(effects).toEqual([{ runs: TASKS - 1, tasks: TASKS - 1 }]);
    const [poison] = await dataSource.query(
      `SELECT attempts, dead_at IS NOT NULL AS dead, last_error FROM delayed_task WHERE (payload->>'poison')::boolean`,
    );
    expect(poison).toMatchObject({ attempts: MAX_ATTEMPTS, dead: true });
    expect(poison.last_error).toMatch(/cut off: instance .* stopped or died while running it/);
    expect(poison.last_error).toMatch(/dead-lettered without running it again/);
    const [healthy] = await dataSource.query(
      `SELECT count(*)::int AS executed, max(attempts) AS most FROM delayed_task
       WHERE executed_at IS NOT NULL`,
    );
    // The first death charged its batch-mates an attempt too; none ran twice.
    expect(healthy.executed).toBe(TASKS - 1);
    expect(healthy.most).toBeLessThanOrEqual(2);
  }, 240_000);
});
