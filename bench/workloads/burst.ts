/**
 * `burst`: 10,000 and 100,000 tasks due at the same instant (a whole second),
 * scheduled ahead through each system's bulk API. Drain time (last effect −
 * due time), effects per second (first to last effect), lateness,
 * duplicates and missing — plus the limit: the bare effect with one
 * transaction per effect, and 50 per transaction, 10 loops over a pool of 10
 * (best of 3 runs at 10,000, of 2 at 100,000).
 * Peers at 100,000 are capped at 60 s of draining (reported as capped).
 * statements/task counts what the system's process sent to Postgres, scheduling included.
 */
import { SystemProcess } from '../harness/child.js';
import {
  dropDatabase,
  freshDatabase,
  readOutcome,
  round,
  seedOrders,
  withClient,
} from '../harness/db.js';
import { ms, num, ratio, statementTable, table } from '../harness/format.js';
import { log } from '../harness/progress.js';
import { runDueTasks, type DueRun } from '../harness/run-system.js';
import type { RunContext, Workload } from '../harness/workload.js';
import type { BareMode } from '../systems/bare.js';
import { PEERS, type SystemName } from '../systems/system.js';
import type { ScheduleFigure } from './schedule.js';

export interface BareFigure {
  mode: BareMode;
  count: number;
  ms: number;
  effectsPerSecond: number;
  duplicates: number;
  missing: number;
  /** Effects/s of every repetition; the figure is the best (a limit is what can be reached). */
  repetitions: number[];
}

export interface BurstSize {
  count: number;
  bare: BareFigure[];
  runs: DueRun[];
  /** This project again with metrics and events on, right after its run with them off. */
  observed?: DueRun;
}

async function bareOnce(
  mode: BareMode,
  count: number,
  database: string,
): Promise<Omit<BareFigure, 'repetitions'>> {
  const url = await freshDatabase(database);
  const sut = SystemProcess.spawn();
  try {
    return await withClient(url, async (client) => {
      await seedOrders(client, { count, firstDueMs: Date.now(), stepMs: 0 });
      const result = await sut.bare(url, mode, count);
      const outcome = await readOutcome(client, count);
      return {
        mode,
        count,
        ms: round(result.ms),
        effectsPerSecond: round((count / result.ms) * 1000),
        duplicates: outcome.duplicates,
        missing: outcome.missing,
      };
    });
  } finally {
    await sut.stop();
    await dropDatabase(database);
  }
}

/** The best of `reps` runs, each on a fresh database: one short run is at the mercy of a checkpoint. */
async function bare(
  mode: BareMode,
  count: number,
  database: string,
  reps: number,
): Promise<BareFigure> {
  const runs = [];
  for (let r = 0; r < reps; r++) runs.push(await bareOnce(mode, count, database));
  const best = runs.reduce((a, b) => (b.effectsPerSecond > a.effectsPerSecond ? b : a));
  const repetitions = runs.map((r) => r.effectsPerSecond);
  log(`  bare effect, ${mode}: ${repetitions.map((e) => num(e)).join(', ')} effects/s`);
  return { ...best, repetitions };
}

/** Time to seed and bulk-schedule `count` tasks: from this run's `schedule` figures when there are some. */
function leadFor(
  system: SystemName,
  count: number,
  schedule?: { figures: ScheduleFigure[] },
): number {
  const rate = schedule?.figures.find((f) => f.system === system)?.bulkPerSecond ?? 15_000;
  return 1_500 + count / 50 + (count / rate) * 1_500;
}

export const burst: Workload<{ sizes: BurstSize[] }> = {
  name: 'burst',
  title: 'Burst: tasks due at the same instant',
  async run(ctx: RunContext) {
    const sizes: BurstSize[] = [];
    for (const count of [ctx.size(10_000, 1_000), ctx.size(100_000, 10_000)]) {
      const large = count >= ctx.size(100_000, 10_000);
      const size: BurstSize = { count, bare: [], runs: [] };
      for (const mode of ['one-per-transaction', 'batch-50'] as BareMode[]) {
        size.bare.push(await bare(mode, count, ctx.database(`burst_bare`), large ? 2 : 3));
      }
      for (const system of ['project', ...PEERS] as SystemName[]) {
        const options = {
          system,
          database: ctx.database(`burst_${system.replace('-', '_')}`),
          count,
          stepMs: 0,
          leadMs: leadFor(system, count, ctx.previous.schedule),
          capMs: system === 'project' || !large ? 300_000 : ctx.size(60_000, 20_000),
        };
        size.runs.push(await runDueTasks(options));
        // Back to back with the run above, so the two see the same machine.
        if (system === 'project') size.observed = await runDueTasks({ ...options, observe: true });
      }
      sizes.push(size);
    }
    return { sizes };
  },
  markdown({ sizes }) {
    return sizes
      .map(({ count, bare: limits, runs: measured, observed }) => {
        const runs = observed ? [measured[0], observed, ...measured.slice(1)] : measured;
        const bestPeer = Math.max(
          ...runs.filter((r) => r.system !== 'project').map((r) => r.effectsPerSecond ?? 0),
        );
        const rows = runs.map((r) => [
          r.label + notes(r),
          `${num(r.outcome.effected)}/${num(r.count)}`,
          ms(r.drainMs),
          r.effectsPerSecond,
          ratio(r.effectsPerSecond ?? 0, bestPeer),
          ms(r.outcome.lateness?.p50),
          ms(r.outcome.lateness?.p99),
          ms(r.outcome.lateness?.max),
          r.outcome.duplicates,
          r.capped ? `${num(r.outcome.missing)} not run (capped)` : r.outcome.missing,
          r.statementsPerTask,
          r.cpuSeconds,
        ]);
        for (const b of limits) {
          rows.push([
            `limit: bare effect, ${b.mode}`,
            `${num(b.count)}/${num(b.count)}`,
            ms(b.ms),
            b.effectsPerSecond,
            ratio(b.effectsPerSecond, bestPeer),
            '—',
            '—',
            '—',
            b.duplicates,
            b.missing,
            b.mode === 'batch-50' ? 1.04 : 1,
            '—',
          ]);
        }
        const project = measured.find((r) => r.system === 'project');
        const cost =
          observed && project
            ? `\n\nMetrics and events on vs off: ${num(observed.effectsPerSecond ?? 0)}/s vs ${num(project.effectsPerSecond ?? 0)}/s = ${num((observed.effectsPerSecond ?? 0) / (project.effectsPerSecond ?? 1), 3)}×, ${num(observed.cpuSeconds, 2)} vs ${num(project.cpuSeconds, 2)} CPU s.`
            : '';
        return `**${num(count)} tasks due at once**\n\n${table(
          [
            'system',
            'effected',
            'drain',
            'effects/s',
            'vs best peer',
            'lateness p50',
            'p99',
            'max',
            'duplicates',
            'missing',
            'statements/task',
            'CPU s',
          ],
          rows,
        )}${cost}`;
      })
      .concat(statementTimes(sizes[sizes.length - 1]))
      .join('\n\n');
  },
};

/** Where this project's connections spent their time in the largest burst: what to make cheaper. */
function statementTimes(size: BurstSize | undefined): string[] {
  const project = size?.runs.find((r) => r.system === 'project');
  return statementTable(
    `**Where this project's connections spent their time, ${num(size?.count ?? 0)} tasks** (from send to reply, summed over its 10 connections)`,
    project?.statementTimes,
  );
}

export function notes(r: DueRun): string {
  const parts = [];
  if (r.capped) parts.push('capped');
  if (r.scheduledLateMs > 0)
    parts.push(`scheduling ended ${ms(r.scheduledLateMs)} after the due time`);
  return parts.length ? ` (${parts.join('; ')})` : '';
}
