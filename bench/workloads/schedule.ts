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
import { label, PEERS, type SystemName } from '../systems/system.js';

export interface ScheduleFigure {
  system: SystemName;
  label: string;
  tasks: number;
  onePerCallPerSecond: number;
  bulkPerSecond: number;
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
    const firstDueMs = Date.now() + DUE_IN_MS;
    // Both rounds use order ids 1..count; nothing falls due during the run.
    const one = await sut.schedule({ count, firstDueMs, stepMs: 0 }, 'one');
    const bulk = await sut.schedule({ count, firstDueMs, stepMs: 0 }, 'bulk');
    const figure = {
      system,
      label: label(system),
      tasks: count,
      onePerCallPerSecond: round((count / one.ms) * 1000),
      bulkPerSecond: round((count / bulk.ms) * 1000),
    };
    log(
      `  ${figure.label}: ${num(figure.onePerCallPerSecond)}/s one per call, ${num(figure.bulkPerSecond)}/s bulk`,
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
      figures.map((f) => [
        f.label,
        f.tasks,
        f.onePerCallPerSecond,
        f.bulkPerSecond,
        f.system === 'project'
          ? '—'
          : `${ratio(project.onePerCallPerSecond, f.onePerCallPerSecond)} / ${ratio(project.bulkPerSecond, f.bulkPerSecond)}`,
      ]),
    );
  },
};
