/**
 * pg-boss 12: `send` / `insert` with `startAfter`; one `work()` with
 * `localConcurrency` 10 (v12's way to run jobs concurrently: ten workers, each
 * polling on its own), each fetching up to 50 jobs at the shortest polling
 * interval it allows (0.5 s) and, while a fetch comes back full, fetching
 * again at once (`burstWhenBatchFull`, its setting for a backlog); each runs
 * its batch's effects one after the other on pg-boss's own pool of 10.
 * LISTEN/NOTIFY is left off: it wakes workers when a job is created, and
 * these jobs come due later.
 */
import { PgBoss } from 'pg-boss';
import { EFFECT_SQL } from '../harness/db.js';
import type { Task } from '../harness/plan.js';
import type { SystemFactory } from './system.js';

const QUEUE = 'bench';
const BATCH = 50;

export const createPgBoss: SystemFactory = (settings) => {
  const boss = new PgBoss({ connectionString: settings.databaseUrl, max: settings.poolSize });
  boss.on('error', (error) => console.error(`pg-boss: ${error.message}`));
  return {
    async start() {
      await boss.start();
      await boss.createQueue(QUEUE);
      const db = boss.getDb();
      await boss.work<{ orderId: number }>(
        QUEUE,
        {
          localConcurrency: settings.concurrency,
          batchSize: BATCH,
          pollingIntervalSeconds: 0.5,
          burstWhenBatchFull: true,
        },
        async (jobs) => {
          for (const job of jobs) await db.executeSql(EFFECT_SQL, [job.data.orderId]);
        },
      );
    },
    async scheduleOne(task: Task) {
      await boss.send(QUEUE, { orderId: task.orderId }, { startAfter: new Date(task.dueAtMs) });
    },
    async scheduleMany(tasks) {
      await boss.insert(
        QUEUE,
        tasks.map((t) => ({ data: { orderId: t.orderId }, startAfter: new Date(t.dueAtMs) })),
      );
    },
    async stop() {
      await boss.stop({ graceful: true, timeout: 10_000 });
    },
  };
};
