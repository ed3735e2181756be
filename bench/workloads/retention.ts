/**
 * `retention` (this project only): does pruning old tasks make live ones late?
 * 5,000,000 tasks executed days ago go into `delayed_task` (generate_series,
 * then VACUUM ANALYZE and a CHECKPOINT, before the app starts). On that table
 * the `spread` workload (3,000 tasks due evenly over 60 s) runs twice: quiet
 * (retention off: the 5M rows stay) and pruning (retention on, interval 1 s,
 * so the pruner starts deleting the 5M at once). The app is kept running after
 * the spread until the 5M are gone, to time the whole prune.
 *
 * The machine is shared, so each tick runs the pair twice on a fresh copy of
 * the table (quiet, pruning, quiet, pruning) and is judged on the mean of the
 * pruning runs' p99 against the mean of the quiet runs' p99, every pair's own
 * ratio shown beside it. The pruning p99 is taken over the tasks that fell due
 * while the pruner was deleting (all of them when it outlasts the spread).
 * Prune rate: pg_stat_user_tables.n_tup_del sampled every second by the bench.
 */
import { startAutovacuumStandIn, type VacuumRecord } from '../harness/autovacuum.js';
import { dropDatabase, freshDatabase, round, withClient } from '../harness/db.js';
import { ms, num, table } from '../harness/format.js';
import { log, Progress, sleep } from '../harness/progress.js';
import { analyze, insertExecutedTasks, migrate } from '../harness/project-db.js';
import { deletedSoFar } from '../harness/relation-sizes.js';
import { runDueTasksOn, type DueRun } from '../harness/run-system.js';
import type { RunContext, Workload } from '../harness/workload.js';
import type pg from 'pg';

const SPAN_MS = 60_000;
/** Give the pruner this long to finish the rows after the spread ends. */
const PRUNE_CAP_MS = 15 * 60_000;

export interface PruneTrace {
  /** [seconds since the app was launched, rows deleted so far], one a second. */
  samples: Array<[number, number]>;
  deleted: number;
  /** Epoch ms of the last sample before the first delete and of the first sample with every row gone (null: not within the cap). */
  startedAtMs: number | null;
  endedAtMs: number | null;
  seconds: number | null;
  rowsPerSecond: number | null;
}

export interface Lateness {
  tasks: number;
  p50: number;
  p99: number;
  max: number;
}

export interface RetentionRun {
  tickMs: number;
  round: number;
  mode: 'quiet' | 'pruning';
  spread: DueRun;
  /** Pruning runs: the count over time. */
  prune?: PruneTrace;
  /** Pruning runs: lateness of the tasks due between the prune's start and end (or the spread's end). */
  whilePruning?: Lateness | null;
  /** Pruning runs: share of the spread's due window the prune covered, 0..1. */
  overlap?: number;
  /** What the bench's autovacuum stand-in ran meanwhile (the server's own autovacuum is off); absent when the server's is on. */
  vacuums?: VacuumRecord[];
}

export interface RetentionResult {
  rows: number;
  rounds: number;
  count: number;
  spanMs: number;
  insertSeconds: number[];
  runs: RetentionRun[];
}

export interface TickVerdict {
  tickMs: number;
  quietP99: number;
  pruningP99: number;
  ratio: number;
  clean: boolean;
}

/** The p99 of the quiet runs and of the pruning runs, each averaged over the rounds, per tick. */
export function byTick(result: RetentionResult): TickVerdict[] {
  const ticks = [...new Set(result.runs.map((r) => r.tickMs))];
  return ticks.map((tickMs) => {
    const runs = result.runs.filter((r) => r.tickMs === tickMs);
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    const quiet = runs.filter((r) => r.mode === 'quiet').map((r) => p99Of(r));
    const pruning = runs.filter((r) => r.mode === 'pruning').map((r) => p99Of(r));
    const quietP99 = mean(quiet);
    const pruningP99 = mean(pruning);
    return {
      tickMs,
      quietP99,
      pruningP99,
      ratio: pruningP99 / quietP99,
      clean: runs.every(
        (r) => r.spread.outcome.duplicates === 0 && r.spread.outcome.effected === r.spread.count,
      ),
    };
  });
}

function p99Of(r: RetentionRun): number {
  return r.mode === 'pruning' && r.whilePruning
    ? r.whilePruning.p99
    : (r.spread.outcome.lateness?.p99 ?? NaN);
}

/** Samples the delete count every second until `rows` are gone, or until `finish(capMs)` gives up. */
function tracePrune(client: pg.Client, rows: number, launchedMs: number) {
  const samples: Array<[number, number]> = [];
  let base = 0;
  let done = false;
  let startedAtMs: number | null = null;
  let endedAtMs: number | null = null;
  let lastZeroMs = launchedMs;
  const bar = new Progress('  pruning', rows);
  const loop = (async () => {
    base = await deletedSoFar(client);
    while (!done) {
      const now = Date.now();
      const deleted = (await deletedSoFar(client)) - base;
      samples.push([round((now - launchedMs) / 1000, 1), deleted]);
      bar.update(deleted);
      if (deleted === 0) lastZeroMs = now;
      else startedAtMs ??= lastZeroMs;
      if (deleted >= rows) {
        endedAtMs = now;
        bar.done();
        return;
      }
      await sleep(1000 - (Date.now() - now));
    }
    bar.done('stopped before every row was deleted');
  })();
  return {
    /** Resolves when every row is gone, or after `capMs`. */
    async finish(capMs: number): Promise<PruneTrace> {
      const timer = setTimeout(() => (done = true), capMs);
      await loop;
      clearTimeout(timer);
      done = true;
      const deleted = samples.length ? samples[samples.length - 1][1] : 0;
      const seconds =
        startedAtMs !== null && endedAtMs !== null ? (endedAtMs - startedAtMs) / 1000 : null;
      return {
        samples,
        deleted,
        startedAtMs,
        endedAtMs,
        seconds: seconds === null ? null : round(seconds, 1),
        rowsPerSecond: seconds ? round(deleted / seconds) : null,
      };
    },
  };
}

/** Lateness of the spread's tasks due between `fromMs` and `toMs`. */
async function latenessBetween(
  client: pg.Client,
  fromMs: number,
  toMs: number,
): Promise<Lateness | null> {
  const { rows } = await client.query(
    `SELECT count(*)::int AS n,
            percentile_cont(ARRAY[0.5, 0.99, 1]) WITHIN GROUP (ORDER BY extract(epoch FROM effected_at - due_at) * 1000) AS q
     FROM bench_order
     WHERE effects > 0 AND due_at >= to_timestamp($1::float8 / 1000) AND due_at <= to_timestamp($2::float8 / 1000)`,
    [fromMs, toMs],
  );
  const r = rows[0];
  if (!r.n) return null;
  const q = (r.q as number[]).map((v) => round(v, 1));
  return { tasks: r.n, p50: q[0], p99: q[1], max: q[2] };
}

async function runPair(
  ctx: RunContext,
  tickMs: number,
  roundNo: number,
  rows: number,
  count: number,
  spanMs: number,
): Promise<{ runs: RetentionRun[]; insertSeconds: number }> {
  const database = ctx.database(`retention_${tickMs}`);
  const url = await freshDatabase(database);
  try {
    await migrate(url);
    return await withClient(url, async (client) => {
      log(`  tick ${tickMs} ms, round ${roundNo}: inserting ${num(rows)} executed tasks`);
      const t = Date.now();
      await insertExecutedTasks(client, rows);
      await analyze(client);
      // The insert's WAL is flushed now rather than in a checkpoint during the quiet run.
      await client.query('CHECKPOINT');
      const insertSeconds = round((Date.now() - t) / 1000, 1);
      log(`  inserted, vacuumed and checkpointed in ${insertSeconds} s`);
      const spread = {
        system: 'project' as const,
        tickMs,
        count,
        stepMs: spanMs / count,
        leadMs: 3_000,
        capMs: 30_000,
      };

      let standIn = await startAutovacuumStandIn(url, ['delayed_task', 'delay_attempt']);
      const quiet = await runDueTasksOn(url, spread, {
        retention: { finished: false, dead: false },
      });
      const quietVacuums = await standIn?.stop();
      await client.query('DROP TABLE bench_order');
      await client.query('CHECKPOINT');

      standIn = await startAutovacuumStandIn(url, ['delayed_task', 'delay_attempt']);
      const launchedMs = Date.now();
      const trace = tracePrune(client, rows, launchedMs);
      let prune: PruneTrace | undefined;
      const pruning = await runDueTasksOn(
        url,
        {
          ...spread,
          beforeStop: async () => {
            prune = await trace.finish(PRUNE_CAP_MS);
          },
        },
        // Tasks executed in this run stay (kept 1 h); only the old rows go.
        { retention: { finished: '1h', dead: false, interval: '1s' } },
      );
      prune ??= await trace.finish(0);
      const pruningVacuums = await standIn?.stop();
      const firstDue = await client.query(
        `SELECT extract(epoch FROM min(due_at)) * 1000 AS a, extract(epoch FROM max(due_at)) * 1000 AS b FROM bench_order`,
      );
      const spreadFrom = Number(firstDue.rows[0].a);
      const spreadTo = Number(firstDue.rows[0].b);
      const pruneFrom = prune.startedAtMs ?? launchedMs;
      const pruneTo = prune.endedAtMs ?? Date.now();
      const from = Math.max(spreadFrom, pruneFrom);
      const to = Math.min(spreadTo, pruneTo);
      const whilePruning = to > from ? await latenessBetween(client, from, to) : null;
      const overlap = spreadTo > spreadFrom ? Math.max(0, to - from) / (spreadTo - spreadFrom) : 0;
      log(
        `  quiet p99 ${ms(quiet.outcome.lateness?.p99)}, pruning p99 ${ms(whilePruning?.p99)} (${num(overlap * 100, 0)}% of the spread under the prune); ` +
          `${num(prune.deleted)} deleted${prune.seconds !== null ? ` in ${prune.seconds} s = ${num(prune.rowsPerSecond ?? 0)}/s` : ''}`,
      );
      return {
        insertSeconds,
        runs: [
          { tickMs, round: roundNo, mode: 'quiet', spread: quiet, vacuums: quietVacuums },
          {
            tickMs,
            round: roundNo,
            mode: 'pruning',
            spread: pruning,
            prune,
            whilePruning,
            overlap: round(overlap, 3),
            vacuums: pruningVacuums,
          },
        ],
      };
    });
  } finally {
    await dropDatabase(database);
  }
}

/** The stand-in's vacuums of delayed_task in a run: when, how long, and whether the run ended first. */
function vacuumNote(vacuums: VacuumRecord[] | undefined): string {
  if (vacuums === undefined) return 'server autovacuum';
  const mine = vacuums.filter((v) => v.table === 'delayed_task' && v.what !== 'analyze');
  if (!mine.length) return 'none';
  return mine
    .map(
      (v) =>
        `at ${v.atSeconds} s, ${num(v.seconds, 0)} s${v.cancelled ? ' (cut off at the end)' : ''}`,
    )
    .join('; ');
}

export const retention: Workload<RetentionResult> = {
  name: 'retention',
  title: 'Retention: spread while pruning 5,000,000 old tasks (this project)',
  async run(ctx: RunContext) {
    const rows = ctx.size(5_000_000, 200_000);
    const rounds = ctx.size(2, 1);
    const count = ctx.size(3_000, 300);
    const spanMs = ctx.size(SPAN_MS, 6_000);
    const result: RetentionResult = { rows, rounds, count, spanMs, insertSeconds: [], runs: [] };
    for (const tickMs of [1000, 100]) {
      for (let r = 1; r <= rounds; r++) {
        const pair = await runPair(ctx, tickMs, r, rows, count, spanMs);
        result.insertSeconds.push(pair.insertSeconds);
        result.runs.push(...pair.runs);
      }
    }
    return result;
  },
  markdown(result) {
    const verdicts = byTick(result);
    const pruneStatement = (r: RetentionRun) =>
      r.spread.statementTimes.find((s) => s.statement.startsWith('WITH lock AS'));
    return [
      `${num(result.rows)} tasks executed 2–3 days ago in \`delayed_task\`; spread = ${num(result.count)} tasks due evenly over ${result.spanMs / 1000} s. ` +
        `Quiet: retention off. Pruning: retention on (executed tasks kept 1 h, interval 1 s), the app kept running until the ${num(result.rows)} were gone. ` +
        `Each tick ran quiet, pruning ${result.rounds} times, each pair on a freshly filled table; the pruning p99 is over the tasks due while the prune ran, and the verdict compares the means over the rounds. ` +
        `Rows/s: deleted rows (pg_stat_user_tables, sampled every second) over the time from the last sample before the first delete to the first with all gone. ` +
        (result.runs.some((r) => r.vacuums !== undefined)
          ? `The server runs with autovacuum off, so the bench stood in for one autovacuum worker at the defaults (first look a minute into each run, cut off if still running when the run ends); the vacuum of the deleted rows starts about when the spread ends, so the spread's figures do not include its cost.`
          : `Vacuum: the server's autovacuum.`),
      '',
      table(
        [
          'tick',
          'round',
          'run',
          'effected',
          'duplicates',
          'p50',
          'p99',
          'max',
          'p99 / quiet',
          'prune covered',
          'pruned',
          'in',
          'rows/s',
          'per DELETE of 1,000',
          'vacuums meanwhile',
        ],
        result.runs.map((r) => {
          const l =
            r.mode === 'pruning' && r.whilePruning ? r.whilePruning : r.spread.outcome.lateness;
          const quiet = result.runs.find(
            (q) => q.tickMs === r.tickMs && q.round === r.round && q.mode === 'quiet',
          );
          const s = pruneStatement(r);
          return [
            r.tickMs >= 1000 ? `${r.tickMs / 1000} s` : `${r.tickMs} ms`,
            r.round,
            r.mode,
            r.spread.outcome.effected,
            r.spread.outcome.duplicates,
            ms(l?.p50),
            ms(l?.p99),
            ms(l?.max),
            r.mode === 'pruning' && quiet ? `${num(p99Of(r) / p99Of(quiet), 2)}×` : '',
            r.overlap === undefined ? '' : `${num(r.overlap * 100, 0)}%`,
            r.prune ? r.prune.deleted : '',
            r.prune?.seconds != null ? `${num(r.prune.seconds, 0)} s` : '',
            r.prune?.rowsPerSecond ?? '',
            s ? `${num(s.totalMs / s.count, 1)} ms` : '',
            vacuumNote(r.vacuums),
          ];
        }),
      ),
      '',
      table(
        [
          'tick',
          'quiet p99 (mean)',
          'pruning p99 (mean)',
          'ratio',
          'effects = tasks, no duplicates',
        ],
        verdicts.map((v) => [
          v.tickMs >= 1000 ? `${v.tickMs / 1000} s` : `${v.tickMs} ms`,
          ms(v.quietP99),
          ms(v.pruningP99),
          `${num(v.ratio, 2)}×`,
          v.clean ? 'yes' : '**no**',
        ]),
      ),
    ].join('\n');
  },
};
