/**
 * pg-boss 12, shaped as the public harness's adapter: `insert` in bulk with
 * `startAfter`, one `work()` with `localConcurrency` = the harness's workers
 * (each polling every 0.5 s, the shortest it allows) and a batch sized by the
 * offered rate, ~1 ms of work and a ledger row per job on pg-boss's own pool
 * (its completion is a separate statement, so at least once).
 */
import { PgBoss } from 'pg-boss';
import { INSERT_LEDGER } from './ledger-statements.js';
import { WORK_MS, sleep, type LongSystem, type LongSystemSettings } from './long-system.js';

const QUEUE = 'long';
/**
 * A killed instance's jobs come back after expireInSeconds (15 min by
 * default), checked by maintenance (2 min): shortened so a run drains in minutes.
 */
const EXPIRE_SECONDS = 60;
const MAINTENANCE_SECONDS = 30;

export function createPgBossSystem(settings: LongSystemSettings): LongSystem {
  const boss = new PgBoss({
    connectionString: settings.url,
    max: 10,
    application_name: `long-sut-${settings.instance}`,
    maintenanceIntervalSeconds: MAINTENANCE_SECONDS,
  });
  boss.on('error', (error) => console.error(`pg-boss: ${error.message}`));
  // The harness's rule: about 1.25 × rate spread over twice the workers, 1..64.
  const batchSize = Math.max(
    1,
    Math.min(64, Math.ceil((settings.rate * 1.25) / Math.max(settings.workers * 2, 1))),
  );
  return {
    async start() {
      await boss.start();
      if (!(await boss.getQueue(QUEUE)))
        await boss.createQueue(QUEUE, { expireInSeconds: EXPIRE_SECONDS });
      const db = boss.getDb();
      await boss.work<{ id: number; due: number }>(
        QUEUE,
        {
          localConcurrency: settings.workers,
          batchSize,
          pollingIntervalSeconds: 0.5,
        },
        async (jobs) => {
          for (const job of jobs) {
            const started = Date.now();
            await sleep(WORK_MS);
            await db.executeSql(INSERT_LEDGER, [
              job.data.id,
              job.data.due,
              started,
              settings.instance,
            ]);
          }
        },
      );
    },
    async schedule(tasks) {
      await boss.insert(
        QUEUE,
        tasks.map((t) => ({ data: { id: t.id, due: t.dueMs }, startAfter: new Date(t.dueMs) })),
      );
    },
    async stop() {
      await boss.stop({ graceful: true, timeout: 10_000 });
    },
  };
}
