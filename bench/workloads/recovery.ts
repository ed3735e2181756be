/**
 * `recovery` (this project only): 100,000 tasks that fell due while the app
 * was down (inserted as overdue, due over the 8 minutes before, unleased),
 * then the app starts: start-up, time from start to the first and the last
 * effect, effects per second from start and over the span of the effects (the
 * burst's measure, which the target compares with), duplicates, missing.
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
import { ms, num, statementTable, table } from '../harness/format.js';
import type { StatementTime } from '../systems/sut-main.js';
import { analyze, insertTasksForOrders, migrate } from '../harness/project-db.js';
import { waitForEffects } from '../harness/wait.js';
import type { RunContext, Workload } from '../harness/workload.js';

export interface RecoveryResult {
  count: number;
  startupMs: number;
  /** From the start of the app's bootstrap to the last effect. */
  toLastEffectMs: number | null;
  effectsPerSecond: number | null;
  /** From the start of the app's bootstrap to the first effect. */
  toFirstEffectMs?: number | null;
  /** Over the span from the first effect to the last: the burst's measure, to compare with it. */
  drainEffectsPerSecond?: number | null;
  outcome: Outcome;
  /** Where the app's connections spent their time, from start to the last effect. */
  statementTimes?: StatementTime[];
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
        const statementTimes = await sut.statementTimes();
        await sut.stop();
        const outcome = await readOutcome(client, count);
        const toLastEffectMs =
          outcome.lastEffectMs === null ? null : round(outcome.lastEffectMs - started.startedAtMs);
        const span =
          outcome.firstEffectMs === null || outcome.lastEffectMs === null
            ? null
            : outcome.lastEffectMs - outcome.firstEffectMs;
        return {
          count,
          startupMs: round(started.ms),
          toLastEffectMs,
          effectsPerSecond: toLastEffectMs
            ? round((outcome.effected / toLastEffectMs) * 1000)
            : null,
          toFirstEffectMs:
            outcome.firstEffectMs === null
              ? null
              : round(outcome.firstEffectMs - started.startedAtMs),
          drainEffectsPerSecond: span ? round((outcome.effected / span) * 1000) : null,
          outcome,
          statementTimes,
        };
      });
    } finally {
      await sut.stop();
      await dropDatabase(database);
    }
  },
  markdown(r) {
    const times = statementTable(
      `**Where the app's connections spent their time** (from send to reply, summed over its connections)`,
      r.statementTimes,
    );
    return [
      table(
        [
          'overdue tasks',
          'start-up',
          'start → first effect',
          'start → last effect',
          'effects/s (from start)',
          'effects/s (first → last effect, as burst)',
          'duplicates',
          'missing',
        ],
        [
          [
            num(r.count),
            ms(r.startupMs),
            ms(r.toFirstEffectMs),
            ms(r.toLastEffectMs),
            r.effectsPerSecond,
            r.drainEffectsPerSecond ?? '—',
            r.outcome.duplicates,
            r.outcome.missing,
          ],
        ],
      ),
      ...times,
    ].join('\n\n');
  },
};
