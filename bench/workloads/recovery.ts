/**
 * `recovery` (this project only): 100,000 tasks that fell due while the app
 * was down (inserted as overdue, due over the 8 minutes before, unleased),
 * then the app starts: start-up, time from start to the last effect,
 * effects per second, duplicates, missing.
 */
import { SystemProcess } from '../harness/child.js';
import {
  dropDatabase,
  freshDatabase,
  readOutcome,
  round,
  seedOrders,
  withClient,
  type Outcome,
} from '../harness/db.js';
import { ms, num, table } from '../harness/format.js';
import { analyze, insertTasksForOrders, migrate } from '../harness/project-db.js';
import { waitForEffects } from '../harness/wait.js';
import type { RunContext, Workload } from '../harness/workload.js';

export interface RecoveryResult {
  count: number;
  startupMs: number;
  /** From the start of the app's bootstrap to the last effect. */
  toLastEffectMs: number | null;
  effectsPerSecond: number | null;
  outcome: Outcome;
}

export const recovery: Workload<RecoveryResult> = {
  name: 'recovery',
  title: 'Recovery: 100,000 overdue tasks at start (this project)',
  async run(ctx: RunContext) {
    const count = ctx.size(100_000, 10_000);
    const database = ctx.database('recovery');
    const url = await freshDatabase(database);
    await migrate(url);
    const sut = SystemProcess.spawn();
    try {
      return await withClient(url, async (client) => {
        await seedOrders(client, {
          count,
          firstDueMs: Date.now() - 600_000,
          stepMs: 480_000 / count,
        });
        await insertTasksForOrders(client);
        await analyze(client);
        const started = await sut.start('project', url);
        await waitForEffects(client, count, `recovering ${num(count)}`, 600_000);
        await sut.stop();
        const outcome = await readOutcome(client, count);
        const toLastEffectMs =
          outcome.lastEffectMs === null ? null : round(outcome.lastEffectMs - started.startedAtMs);
        return {
          count,
          startupMs: round(started.ms),
          toLastEffectMs,
          effectsPerSecond: toLastEffectMs
            ? round((outcome.effected / toLastEffectMs) * 1000)
            : null,
          outcome,
        };
      });
    } finally {
      await sut.stop();
      await dropDatabase(database);
    }
  },
  markdown(r) {
    return table(
      [
        'overdue tasks',
        'start-up',
        'start → last effect',
        'effects/s (from start)',
        'duplicates',
        'missing',
      ],
      [
        [
          num(r.count),
          ms(r.startupMs),
          ms(r.toLastEffectMs),
          r.effectsPerSecond,
          r.outcome.duplicates,
          r.outcome.missing,
        ],
      ],
    );
  },
};
