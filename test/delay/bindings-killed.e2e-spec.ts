import { spawn, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import { migrateDelaySchema } from 'nest-delay';
import {
  createTestDatabase,
  describeWithServer,
  type TestDatabase,
} from '../support/test-database.js';

/**
 * For each binding, a real process (test/fixtures/binding-worker.mjs, on the
 * built package, no TypeORM) writes a task's effect through the binding on
 * its claim's transaction and is killed (SIGKILL) before the claim commits;
 * the next process, a supervisor's restart, takes the task over once the
 * dead one's lease expires. The killed write rolled back with its claim, so
 * the effect is there exactly once, the second attempt's, and the task is executed.
 */
function worker(url: string, binding: string, mode: 'hang' | 'finish') {
  const child = spawn(process.execPath, ['test/fixtures/binding-worker.mjs', binding, mode], {
    env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', DATABASE_URL: url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

function exited(child: ChildProcess, output: () => string, ms: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`worker still running after ${ms} ms:\n${output()}`));
    }, ms);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

describeWithServer('a process killed in the middle of a handler writing through a binding', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    await migrateDelaySchema(pool);
    await pool.query(
      `CREATE TABLE killed_effect (task_id bigint NOT NULL, binding text NOT NULL, attempt int NOT NULL)`,
    );
  });

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it.each(['pg', 'kysely', 'drizzle', 'mikro-orm'])(
    '%s: the killed attempt leaves nothing, the next one commits its effect once',
    async (binding) => {
      const [{ id }] = (
        await pool.query(
          `INSERT INTO delayed_task (type, payload, due_at, max_attempts, created_at, updated_at)
           VALUES ('binding.killed', '{}', now(), 5, now(), now()) RETURNING id`,
        )
      ).rows;
      const first = worker(db.url, binding, 'hang');
      const died = exited(first.child, first.output, 60_000);
      // Its write is made, inside the claim that has not committed.
      await new Promise<void>((resolve, reject) => {
        const look = setInterval(() => {
          if (first.output().includes(`WROTE ${id}`)) {
            clearInterval(look);
            resolve();
          }
        }, 20);
        died.then(() => {
          clearInterval(look);
          reject(new Error(`worker exited before its write:\n${first.output()}`));
        }, reject);
      });
      const seenMidHandler = await pool.query(
        `SELECT count(*)::int AS n FROM killed_effect WHERE task_id = $1`,
        [id],
      );
      expect(seenMidHandler.rows[0].n).toBe(0);
      first.child.kill('SIGKILL');
      await died.catch(() => undefined);

      const second = worker(db.url, binding, 'finish');
      expect(await exited(second.child, second.output, 60_000)).toBe(0);
      const effects = await pool.query(
        `SELECT binding, attempt FROM killed_effect WHERE task_id = $1`,
        [id],
      );
      expect(effects.rows).toEqual([{ binding, attempt: 2 }]);
      const task = await pool.query(
        `SELECT executed_at, attempts FROM delayed_task WHERE id = $1`,
        [id],
      );
      expect(task.rows[0].executed_at).toBeInstanceOf(Date);
      expect(task.rows[0].attempts).toBe(2);
    },
    120_000,
  );
});
