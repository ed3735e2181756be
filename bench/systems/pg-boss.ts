/**
 * pg-boss 10 (the last major that runs on Node 20): `send` / `insert` with
 * `startAfter`; ten `work()` loops (v10's way to run jobs concurrently), each
 * fetching up to 50 jobs per poll at the shortest polling interval it allows
 * (0.5 s), running their effects one after the other on pg-boss's own pool of 10.
 */
import PgBoss from 'pg-boss';
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
      for (let i = 0; i < settings.concurrency; i++) {
        await boss.work<{ orderId: number }>(
          QUEUE,
          { batchSize: BATCH, pollingIntervalSeconds: 0.5 },
          async (jobs) => {
            for (const job of jobs) await db.executeSql(EFFECT_SQL, [job.data.orderId]);
          },
        );
      }
    },
    async scheduleOne(task: Task) {
      await boss.send(QUEUE, { orderId: task.orderId }, { startAfter: new Date(task.dueAtMs) });
    },
    async scheduleMany(tasks) {
      await boss.insert(
        tasks.map((t) => ({
          name: QUEUE,
          data: { orderId: t.orderId },
          startAfter: new Date(t.dueAtMs),
        })),
      );
    },
    async stop() {
      await boss.stop({ graceful: true, wait: true, timeout: 10_000 });
    },
  };
};
