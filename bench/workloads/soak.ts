/**
 * `soak` (this project only, opt-in: `npm run bench -- --only soak`): a
 * steady stream of new tasks (200 a second, each due 5 s after it is
 * scheduled, all executed) for BENCH_SOAK_MINUTES (default 20), with
 * retention short (executed tasks kept 2 minutes, pruned every 15 s) so the
 * table reaches its steady state within minutes. Every 30 s: the table's and
 * each index's size on disk, live and dead tuples. A table that keeps growing
 * once rows leave as fast as they come is bloat (the pruner's deletes not
 * reclaimed, or an index that never gives pages back); the verdict compares
 * the end with the middle of the run.
 */
import { startAutovacuumStandIn, type VacuumRecord } from '../harness/autovacuum.js';
import { SystemProcess } from '../harness/child.js';
import {
  dropDatabase,
  freshDatabase,
  readOutcome,
  seedOrders,
  withClient,
  type Outcome,
} from '../harness/db.js';
import { mib, ms, num, ratio, table } from '../harness/format.js';
import { log, Progress, sleep } from '../harness/progress.js';
import { wholeSecondAfter, type TaskPlan } from '../harness/plan.js';
import { sampleRelation, type RelationSample } from '../harness/relation-sizes.js';
import { waitForEffects } from '../harness/wait.js';
import type { RunContext, Workload } from '../harness/workload.js';

const RATE_PER_SECOND = 200;
const LEAD_MS = 5_000;
const SAMPLE_EVERY_MS = 30_000;

export interface SoakResult {
  minutes: number;
  ratePerSecond: number;
  leadMs: number;
  retention: { finished: string; interval: string };
  samples: RelationSample[];
  /** Seconds the scheduling loop fell behind its plan, at worst (the machine was too busy to keep the rate). */
  worstScheduleLagMs: number;
  outcome: Outcome;
  /** The server's autovacuum, or the bench's stand-in for it (harness/autovacuum.ts) and what it ran. */
  autovacuum: 'server' | 'bench stand-in';
  vacuums: VacuumRecord[];
}

/** The sample nearest to half the run, and the last. */
export function middleAndEnd(r: SoakResult): { middle: RelationSample; end: RelationSample } {
  const half = (r.minutes * 60) / 2;
  const middle = r.samples.reduce((a, b) =>
    Math.abs(b.atSeconds - half) < Math.abs(a.atSeconds - half) ? b : a,
  );
  return { middle, end: r.samples[r.samples.length - 1] };
}

function soakMinutes(ctx: RunContext): number {
  const set = process.env.BENCH_SOAK_MINUTES;
  if (set === undefined || set === '') return ctx.size(20, 2);
  const minutes = Number(set);
  if (!Number.isFinite(minutes) || minutes < 1)
    throw new Error(
      `BENCH_SOAK_MINUTES must be a number of minutes ≥ 1; got ${JSON.stringify(set)}`,
    );
  return minutes;
}

/** The stand-in's vacuums of delayed_task begun by then (its clock starts a few seconds before the samples'). */
function standInVacuumsBy(r: SoakResult, atSeconds: number): number {
  return r.vacuums.filter(
    (v) => v.table === 'delayed_task' && v.what !== 'analyze' && v.atSeconds <= atSeconds,
  ).length;
}

export const soak: Workload<SoakResult> = {
  name: 'soak',
  title: 'Soak: a steady stream of tasks under short retention (this project)',
  optIn: true,
  async run(ctx: RunContext) {
    const minutes = soakMinutes(ctx);
    // Quick: kept 20 s and pruned every 5 s, so a 2-minute smoke run prunes at all.
    const retention = ctx.quick
      ? { finished: '20s', interval: '5s' }
      : { finished: '2m', interval: '15s' };
    const seconds = Math.round(minutes * 60);
    const database = ctx.database('soak');
    const url = await freshDatabase(database);
    const { sut } = await SystemProcess.launch('project', url, { retention });
    const standIn = await startAutovacuumStandIn(url, ['delayed_task', 'delay_attempt']);
    try {
      return await withClient(url, async (client) => {
        const firstDueMs = wholeSecondAfter(LEAD_MS + 2_000);
        const whole: TaskPlan = {
          count: RATE_PER_SECOND * seconds,
          firstDueMs,
          stepMs: 1000 / RATE_PER_SECOND,
        };
        await seedOrders(client, whole);
        log(
          `  ${num(RATE_PER_SECOND)} tasks/s due ${LEAD_MS / 1000} s ahead for ${num(minutes)} min, retention ${retention.finished} every ${retention.interval}`,
        );
        const startedMs = firstDueMs - LEAD_MS;
        const samples: RelationSample[] = [];
        let nextSampleMs = startedMs;
        let worstLagMs = 0;
        const bar = new Progress('soak', seconds, 's');
        for (let k = 0; k < seconds; k++) {
          const at = startedMs + k * 1000;
          if (Date.now() < at) await sleep(at - Date.now());
          worstLagMs = Math.max(worstLagMs, Date.now() - at);
          if (Date.now() >= nextSampleMs) {
            samples.push(await sampleRelation(client, startedMs));
            nextSampleMs += SAMPLE_EVERY_MS;
          }
          // The tasks due in the second that starts LEAD_MS from now.
          await sut.schedule(
            {
              count: RATE_PER_SECOND,
              firstDueMs: firstDueMs + k * 1000,
              stepMs: whole.stepMs,
              offset: k * RATE_PER_SECOND,
            },
            'bulk',
          );
          bar.update(k + 1);
        }
        bar.done();
        const endMs = startedMs + seconds * 1000;
        if (Date.now() < endMs) await sleep(endMs - Date.now());
        samples.push(await sampleRelation(client, startedMs));
        const vacuums = (await standIn?.stop()) ?? [];
        await waitForEffects(client, whole.count, 'soak, the last tasks', LEAD_MS + 60_000);
        await sut.stop();
        const outcome = await readOutcome(client, whole.count);
        const result: SoakResult = {
          minutes,
          ratePerSecond: RATE_PER_SECOND,
          leadMs: LEAD_MS,
          retention,
          samples,
          worstScheduleLagMs: Math.round(worstLagMs),
          outcome,
          autovacuum: standIn ? 'bench stand-in' : 'server',
          vacuums,
        };
        const { middle, end } = middleAndEnd(result);
        log(
          `  delayed_task ${mib(middle.totalBytes)} at ${middle.atSeconds} s, ${mib(end.totalBytes)} at ${end.atSeconds} s (${ratio(end.totalBytes, middle.totalBytes)})`,
        );
        return result;
      });
    } finally {
      await standIn?.stop();
      await sut.stop();
      await dropDatabase(database);
    }
  },
  markdown(r) {
    const { middle, end } = middleAndEnd(r);
    const indexes = Object.keys(end.indexBytes);
    const kib = (b: number) => `${num(b / 1024, 0)} KiB`;
    const sizeRow = (name: string, m: number, e: number) => [name, kib(m), kib(e), ratio(e, m)];
    const shortName = (i: string) => i.replace(/^delayed_task_/, '');
    return [
      `${num(r.ratePerSecond)} tasks/s, each due ${r.leadMs / 1000} s after it was scheduled, for ${num(r.minutes)} min; retention: executed tasks kept ${r.retention.finished}, pruned every ${r.retention.interval}. ` +
        `Effects: ${num(r.outcome.effected)} of ${num(r.outcome.tasks)}, ${r.outcome.duplicates} duplicates, ${r.outcome.missing} missing; lateness p50 ${ms(r.outcome.lateness?.p50)}, p99 ${ms(r.outcome.lateness?.p99)}; ` +
        `the scheduling loop fell at most ${ms(r.worstScheduleLagMs)} behind its plan. ` +
        (r.autovacuum === 'server'
          ? "Vacuum: the server's autovacuum."
          : `Vacuum: the server runs with autovacuum off, so the bench stood in for one autovacuum worker at the defaults (bench/harness/autovacuum.ts): ${r.vacuums.filter((v) => v.table === 'delayed_task' && v.what !== 'analyze').length} vacuums of delayed_task, ${r.vacuums.filter((v) => v.table === 'delay_attempt' && v.what !== 'analyze').length} of delay_attempt.`),
      '',
      `Middle (${middle.atSeconds} s) and end (${end.atSeconds} s):`,
      '',
      table(
        ['relation', 'middle', 'end', 'end / middle'],
        [
          sizeRow(
            'delayed_task, total (heap, indexes, TOAST, maps)',
            middle.totalBytes,
            end.totalBytes,
          ),
          sizeRow('delayed_task heap', middle.tableBytes, end.tableBytes),
          ...indexes.map((i) =>
            sizeRow(`index ${i}`, middle.indexBytes[i] ?? 0, end.indexBytes[i]),
          ),
          sizeRow('delay_attempt, total', middle.attemptTotalBytes, end.attemptTotalBytes),
        ],
      ),
      '',
      'Every sample:',
      '',
      table(
        ['at', 'total', 'heap', ...indexes.map(shortName), 'live', 'dead', 'deleted', 'vacuums'],
        r.samples.map((s) => [
          `${s.atSeconds} s`,
          kib(s.totalBytes),
          kib(s.tableBytes),
          ...indexes.map((i) => kib(s.indexBytes[i] ?? 0)),
          s.liveTuples,
          s.deadTuples,
          s.deletedTuples,
          s.autovacuums + (s.vacuums ?? standInVacuumsBy(r, s.atSeconds)),
        ]),
      ),
    ].join('\n');
  },
};
