/**
 * BullMQ delayed jobs on Redis: `add` / `addBulk` with `delay`, a Worker with
 * concurrency 10, the effect on a pg pool of 10. Completed jobs are removed,
 * as BullMQ's docs advise for queues that do not need their history.
 */
import { Queue, Worker } from 'bullmq';
import pg from 'pg';
import { EFFECT_SQL } from '../harness/db.js';
import type { Task } from '../harness/plan.js';
import type { SystemFactory } from './system.js';

const QUEUE = 'bench';

export const createBullmq: SystemFactory = (settings) => {
  const redis = new URL(settings.redisUrl);
  const connection = {
    host: redis.hostname,
    port: Number(redis.port || 6379),
    maxRetriesPerRequest: null,
  };
  const prefix = `bench:${settings.namespace}`;
  const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: settings.poolSize });
  const queue = new Queue(QUEUE, {
    connection,
    prefix,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: 1000 },
  });
  let worker: Worker | undefined;
  // BullMQ takes a delay, not a time: compute it at the last moment.
  const job = (task: Task) => ({
    name: 'effect',
    data: { orderId: task.orderId },
    opts: { delay: Math.max(0, task.dueAtMs - Date.now()) },
  });
  return {
    async start() {
      await queue.waitUntilReady();
      worker = new Worker(
        QUEUE,
        async (j) => {
          await pool.query(EFFECT_SQL, [j.data.orderId]);
        },
        { connection, prefix, concurrency: settings.concurrency },
      );
      await worker.waitUntilReady();
    },
    async scheduleOne(task) {
      const { name, data, opts } = job(task);
      await queue.add(name, data, opts);
    },
    async scheduleMany(tasks) {
      await queue.addBulk(tasks.map(job));
    },
    async stop() {
      await worker?.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await pool.end();
    },
  };
};
