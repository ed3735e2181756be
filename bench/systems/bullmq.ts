/**
 * BullMQ 6 delayed jobs on Redis: `add` / `addBulk` with `delay`, a Worker with
 * concurrency 10, the effect on a pg pool of 10. Completed jobs are removed,
 * as BullMQ's docs advise for queues that do not need their history.
 * bullmq-pg.ts is the same on BullMQ's PostgreSQL backend.
 */
import { Queue, Worker } from 'bullmq';
import pg from 'pg';
import { EFFECT_SQL } from '../harness/db.js';
import type { Task } from '../harness/plan.js';
import type { SystemFactory } from './system.js';

export const QUEUE = 'bench';
/** Completed jobs removed, as BullMQ's docs advise for queues that do not need their history. */
export const DEFAULT_JOB_OPTIONS = { removeOnComplete: true, removeOnFail: 1000 };

/** BullMQ takes a delay, not a time: computed at the last moment. */
export function job(task: Task) {
  return {
    name: 'effect',
    data: { orderId: task.orderId },
    opts: { delay: Math.max(0, task.dueAtMs - Date.now()) },
  };
}

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
    defaultJobOptions: DEFAULT_JOB_OPTIONS,
  });
  let worker: Worker | undefined;
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
