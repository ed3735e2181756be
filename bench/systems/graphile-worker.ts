/**
 * graphile-worker 0.18 (pure ESM, Node 22.18+; the API used here is as in
 * 0.17): `addJob` / `addJobs` (WorkerUtils) with `runAt`, a runner with
 * concurrency 10 sharing one pg pool of 10 with the producer. LISTEN/NOTIFY
 * wakes it for jobs that are due when added; jobs that come due later are
 * found by its poll, set to 0.5 s (the interval pg-boss gets too). The effect
 * runs through `withPgClient`.
 */
import { Logger, makeWorkerUtils, run, type Runner, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import { EFFECT_SQL } from '../harness/db.js';
import type { Task } from '../harness/plan.js';
import type { SystemFactory } from './system.js';

const TASK = 'effect';

// It logs every job at info level; keep warnings and errors.
const quietLogger = new Logger(() => (level, message) => {
  if (String(level) === 'error' || String(level) === 'warning')
    console.error(`graphile-worker ${String(level)}: ${message}`);
});

export const createGraphileWorker: SystemFactory = (settings) => {
  const pgPool = new pg.Pool({ connectionString: settings.databaseUrl, max: settings.poolSize });
  let runner: Runner | undefined;
  let utils: WorkerUtils | undefined;
  return {
    async start() {
      runner = await run({
        pgPool,
        concurrency: settings.concurrency,
        pollInterval: 500,
        noHandleSignals: true,
        logger: quietLogger,
        taskList: {
          [TASK]: async (payload, helpers) => {
            const { orderId } = payload as { orderId: number };
            await helpers.withPgClient((client) => client.query(EFFECT_SQL, [orderId]));
          },
        },
      });
      utils = await makeWorkerUtils({ pgPool, logger: quietLogger });
    },
    async scheduleOne(task: Task) {
      await utils!.addJob(TASK, { orderId: task.orderId }, { runAt: new Date(task.dueAtMs) });
    },
    async scheduleMany(tasks) {
      await utils!.addJobs(
        tasks.map((t) => ({
          identifier: TASK,
          payload: { orderId: t.orderId },
          runAt: new Date(t.dueAtMs),
        })),
      );
    },
    async stop() {
      await runner?.stop();
      await utils?.release();
      await pgPool.end();
    },
  };
};
