/**
 * `schedule`: 20,000 tasks due in 10 minutes, written through each system's
 * API: one call per task with 50 calls in flight, then its bulk API in calls
 * of 1,000 (this project's scheduleMany, BullMQ addBulk, pg-boss insert,
 * graphile-worker addJobs, a multi-row INSERT for cron-scan). The systems are
 * running (workers started), as they would be in an app.
 */
import { SystemProcess } from '../harness/child.js';
import { dropDatabase, freshDatabase, round } from '../harness/db.js';
import { num, ratio, table } from '../harness/format.js';
import { log } from '../harness/progress.js';
import type { RunContext, Workload } from '../harness/workload.js';
import type { ScheduleMode } from '../systems/sut-main.js';
import { label, PEERS, type SystemName } from '../systems/system.js';

export interface ScheduleFigure {
  system: SystemName;
  label: string;
  tasks: number;
  onePerCallPerSecond: number;
  bulkPerSecond: number;
  /** This project only: the same rows by bare INSERTs on the same pool, in the same process. */
  bare?: { onePerCallPerSecond: number; bulkPerSecond: number };
}

const DUE_IN_MS = 10 * 60_000;

async function measure(
  system: SystemName,
  count: number,
  database: string,
): Promise<ScheduleFigure> {
  const url = await freshDatabase(database);
  const { sut } = await SystemProcess.launch(system, url);
  try {
    const plan = { count, firstDueMs: Date.now() + DUE_IN_MS, stepMs: 0 };
    // Every round uses order ids 1..count; nothing falls due during the run.
    const rate = async (mode: ScheduleMode) =>
      round((count / (await sut.schedule(plan, mode)).ms) * 1000);
    if (system !== 'project') {
      const figure = {
        system,
        label: label(system),
        tasks: count,
        onePerCallPerSecond: await rate('one'),
        bulkPerSecond: await rate('bulk'),
      };
      log(
        `  ${figure.label}: ${num(figure.onePerCallPerSecond)}/s one per call, ${num(figure.bulkPerSecond)}/s bulk`,
      );
      return figure;
    }
    // The API and its bare floor take turns in ten short rounds each, each
    // going first in half of them, and each rate is over the sum of its
    // rounds: a shared machine's load drifts over seconds, and a table's
    // indexes grow and the JIT warms as rounds go by, alike for both.
    const paired = async (api: ScheduleMode, bare: ScheduleMode) => {
      const ms = { api: 0, bare: 0 };
      const part = { ...plan, count: Math.max(1, Math.floor(count / 10)) };
      for (let r = 0; r < 10; r++) {
        for (const which of r % 2 === 0 ? (['api', 'bare'] as const) : (['bare', 'api'] as const))
          ms[which] += (await sut.schedule(part, which === 'api' ? api : bare)).ms;
      }
      const tasks = part.count * 10;
      return { api: round((tasks / ms.api) * 1000), bare: round((tasks / ms.bare) * 1000) };
    };
    const one = await paired('one', 'bare-one');
    const bulk = await paired('bulk', 'bare-bulk');
    const best = { one: one.api, bulk: bulk.api, 'bare-one': one.bare, 'bare-bulk': bulk.bare };
    const figure = {
      system,
      label: label(system),
      tasks: count,
      onePerCallPerSecond: best.one,
      bulkPerSecond: best.bulk,
      bare: { onePerCallPerSecond: best['bare-one'], bulkPerSecond: best['bare-bulk'] },
    };
    log(
      `  ${figure.label}: ${num(best.one)}/s one per call (bare INSERT ${num(best['bare-one'])}/s), ${num(best.bulk)}/s bulk (bare ${num(best['bare-bulk'])}/s)`,
    );
    return figure;
  } finally {
    await sut.stop();
    await dropDatabase(database);
  }
}

export const schedule: Workload<{ figures: ScheduleFigure[] }> = {
  name: 'schedule',
  title: 'Schedule: 20,000 tasks due in 10 minutes',
  async run(ctx: RunContext) {
    const count = ctx.size(20_000, 2_000);
    const figures: ScheduleFigure[] = [];
    for (const system of ['project', ...PEERS] as SystemName[]) {
      figures.push(
        await measure(system, count, ctx.database(`schedule_${system.replace('-', '_')}`)),
      );
    }
    return { figures };
  },
  markdown({ figures }) {
    const project = figures.find((f) => f.system === 'project')!;
    return table(
      [
        'system',
        'tasks',
        'one call each, 50 in flight (tasks/s)',
        'bulk, 1,000 per call (tasks/s)',
        'this project vs it (one / bulk)',
      ],
      [
        ...figures.map((f) => [
          f.label,
          f.tasks,
          f.onePerCallPerSecond,
          f.bulkPerSecond,
          f.system === 'project'
            ? '—'
            : `${ratio(project.onePerCallPerSecond, f.onePerCallPerSecond)} / ${ratio(project.bulkPerSecond, f.bulkPerSecond)}`,
        ]),
        ...(project.bare
          ? [
              [
                'floor: bare INSERTs of the same rows, same pool and process',
                project.tasks,
                project.bare.onePerCallPerSecond,
                project.bare.bulkPerSecond,
                `${ratio(project.onePerCallPerSecond, project.bare.onePerCallPerSecond)} / ${ratio(project.bulkPerSecond, project.bare.bulkPerSecond)}`,
              ],
            ]
          : []),
      ],
    );
  },
};
