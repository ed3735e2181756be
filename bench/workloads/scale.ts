/**
 * `scale` (this project only): 10,000 tasks due within the window (evenly
 * over 10 s, starting 10 s after the rows are written), alone and then with
 * 1,000,000 more pending tasks due next week, all inserted with
 * generate_series before the app starts. Start-up time, RSS after start (after
 * a full GC, with the near tasks in the wheel), peak RSS, lateness of the near ones.
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
import { mib, ms, num, ratio, table } from '../harness/format.js';
import { log } from '../harness/progress.js';
import { wholeSecondAfter } from '../harness/plan.js';
import { analyze, insertFarTasks, insertTasksForOrders, migrate } from '../harness/project-db.js';
import { waitForEffects } from '../harness/wait.js';
import type { RunContext, Workload } from '../harness/workload.js';

export interface ScaleCase {
  far: number;
  near: number;
  startupMs: number;
  rssAfterStart: number;
  maxRss: number;
  outcome: Outcome;
}

async function runCase(far: number, near: number, database: string): Promise<ScaleCase> {
  const url = await freshDatabase(database);
  await migrate(url);
  const sut = SystemProcess.spawn();
  try {
    return await withClient(url, async (client) => {
      if (far > 0) {
        log(`  inserting ${num(far)} tasks due next week`);
        await insertFarTasks(client, far);
      }
      await analyze(client);
      await seedOrders(client, {
        count: near,
        firstDueMs: wholeSecondAfter(10_000),
        stepMs: 10_000 / near,
      });
      await insertTasksForOrders(client);
      const started = await sut.start('project', url);
      const afterStart = await sut.settledUsage();
      await waitForEffects(client, near, `${num(far)} far + ${num(near)} near`, 60_000);
      const stopped = await sut.usage();
      await sut.stop();
      const result = {
        far,
        near,
        startupMs: round(started.ms),
        rssAfterStart: afterStart.rss,
        maxRss: stopped.maxRss,
        outcome: await readOutcome(client, near),
      };
      log(`  started in ${ms(result.startupMs)}, RSS ${mib(result.rssAfterStart)}`);
      return result;
    });
  } finally {
    await sut.stop();
    await dropDatabase(database);
  }
}

export const scale: Workload<{ cases: ScaleCase[] }> = {
  name: 'scale',
  title: 'Scale: 1,000,000 pending tasks next week (this project)',
  async run(ctx: RunContext) {
    const near = ctx.size(10_000, 1_000);
    const cases = [
      await runCase(0, near, ctx.database('scale_small')),
      await runCase(ctx.size(1_000_000, 100_000), near, ctx.database('scale_large')),
    ];
    return { cases };
  },
  markdown({ cases }) {
    const base = cases[0];
    return table(
      [
        'pending',
        'start-up',
        'RSS after start',
        'vs near only',
        'peak RSS',
        'near lateness p50',
        'p99',
        'max',
        'duplicates',
        'missing',
      ],
      cases.map((c) => [
        c.far ? `${num(c.far)} next week + ${num(c.near)} near` : `${num(c.near)} near only`,
        ms(c.startupMs),
        mib(c.rssAfterStart),
        ratio(c.rssAfterStart, base.rssAfterStart),
        mib(c.maxRss),
        ms(c.outcome.lateness?.p50),
        ms(c.outcome.lateness?.p99),
        ms(c.outcome.lateness?.max),
        c.outcome.duplicates,
        c.outcome.missing,
      ]),
    );
  },
};
