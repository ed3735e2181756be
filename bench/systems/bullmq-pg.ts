/**
 * BullMQ 6.7 on its PostgreSQL backend (`createPostgresBackend`), set up as
 * bullmq.ts sets it up on Redis: delayed jobs through `add` / `addBulk` with
 * `delay`, a Worker with concurrency 10, completed jobs removed, the effect on
 * a pg pool of 10. The queue lives in a schema of its own in the run's
 * database, created by BullMQ's migrations at start (`migrate: true`). The
 * Queue and the Worker each build their own BullMQ pool (10 connections at
 * most), and the Worker a LISTEN connection besides, on which it waits for the
 * next job, re-armed to the next delayed job's due time.
 */
import { Queue, Worker, createPostgresBackend, type PostgresPoolConfig } from 'bullmq';
import pg from 'pg';
import { EFFECT_SQL } from '../harness/db.js';
import type { SystemFactory } from './system.js';
import { DEFAULT_JOB_OPTIONS, QUEUE, job } from './bullmq.js';

export const createBullmqPg: SystemFactory = (settings) => {
  const connection: PostgresPoolConfig = {
    connectionString: settings.databaseUrl,
    schema: `bench_${settings.namespace}`,
    migrate: true,
    max: settings.poolSize,
  };
  const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: settings.poolSize });
  const queue = new Queue(
    QUEUE,
    { connection, defaultJobOptions: DEFAULT_JOB_OPTIONS },
    createPostgresBackend,
  );
  let worker: { close(): Promise<void> } | undefined;
  return {
    async start() {
      // The Queue's connection runs the migrations; the Worker's then finds them in place.
      await queue.waitUntilReady();
      const started = new Worker(
        QUEUE,
        async (j) => {
          await pool.query(EFFECT_SQL, [j.data.orderId]);
        },
        { connection, concurrency: settings.concurrency },
        createPostgresBackend,
      );
      started.on('error', (error) => console.error(`bullmq-pg worker: ${error.message}`));
      await started.waitUntilReady();
      worker = started;
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
      await queue.close();
      await pool.end();
    },
  };
};
