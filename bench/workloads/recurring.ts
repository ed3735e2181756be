/**
 * `recurring`: this project's recurring schedules (issue 20), in two parts.
 *
 * Lateness. Schedules added at run time through `DelaySchedules.upsert`,
 * each occurrence's handler writing one `bench_occurrence` row (its
 * `context.occurrence` and the effect's `clock_timestamp()`), beside 3,000
 * one-off tasks due evenly over the same 60 s (the spread's), in the same
 * process. Two sets, each on a fresh database:
 * - phases spread: 100 schedules `every` 1,000 to 1,396 ms (4 ms apart), so
 *   their occurrences fall across the second rather than on it (an `every`
 *   recurs at multiples of itself since the epoch, and a cron's finest unit
 *   is the second: distinct periods are the only way to spread them);
 * - each whole second: 50 schedules on the cron `*\/1 * * * * *`, all 50 due
 *   at the same instant every second, as second-resolution schedules of
 *   real apps are.
 * Measured over the occurrences due within the 60 s: lateness (effect −
 * scheduled instant), the earliest (negative would be early), and each
 * expected occurrence (every multiple of the period in the window, per
 * schedule) run exactly once: rows = distinct (schedule, instant) =
 * expected. The floor: a bare setTimeout per task at the same overall rate
 * (the one-offs plus the first set's occurrences, evenly over 60 s).
 *
 * The window is planned ahead before the measurement starts: at its
 * default 1 s tick the module plans a schedule's occurrences an hour ahead,
 * at most 1,000 per schedule per planning round (one round per heartbeat,
 * 10 s), so the run waits until every schedule is planned to the horizon;
 * what remains during the 60 s is the steady state (each heartbeat plans
 * the next 10 s of every schedule).
 *
 * Idle cost. 1,000 schedules whose next occurrence is 2 to 23 hours away
 * (daily crons, none within the hour's window, so nothing is planned), then
 * 60 s at rest (12 s after): statements (as `idle` counts them), xact_commit, CPU and RSS
 * of the process, beside the same app with no schedule, in the same run.
 *
 * Only this project runs it: pg-boss 12's `schedule()` sends at most one job
 * per schedule per minute and graphile-worker 0.18's crontab is cron at minute
 * resolution, and the cron scan is the baseline poller with no schedules; see
 * bench/README.md for BullMQ.
 */
import type pg from 'pg';
import { SystemProcess } from '../harness/child.js';
import {
  SERVER_URL,
  dropDatabase,
  freshDatabase,
  readOutcome,
  round,
  seedOrders,
  withClient,
  type Outcome,
} from '../harness/db.js';
import { mib, ms, num, statementTable, table } from '../harness/format.js';
import { wholeSecondAfter, type TaskPlan } from '../harness/plan.js';
import { log, sleep, sleepWithBar } from '../harness/progress.js';
import { runDueTasks, type DueRun } from '../harness/run-system.js';
import { waitForEffects } from '../harness/wait.js';
import type { RunContext, Workload } from '../harness/workload.js';
import type { StatementTime } from '../systems/sut-main.js';
import type { BenchSchedule } from '../systems/system.js';
import { statementsViaExtension, xactCommit } from './idle.js';

const SPAN_MS = 60_000;
const TICK_MS = 1000;
/** DelayModule's default window at a 1 s tick: tickMs × 3,600 slots. */
const WINDOW_MS = TICK_MS * 3600;
/** The heartbeat at the default 30 s lease: a planning round every 10 s. */
const HEARTBEAT_MS = 10_000;
/**
 * While schedules are registered and planned, the bench runs `ANALYZE
 * delayed_task` this often, as a server's autovacuum would (this one may run
 * without: CI does), only sooner. Without statistics for the planned rows,
 * the check each occurrence's claim makes for an earlier occurrence still
 * retrying (overlap: 'skip') scans the pending index instead of the
 * occurrence index: with 100 one-second schedules it took every connection
 * of the pool and the registration did not finish (bench/HISTORY.md).
 */
const ANALYZE_EVERY_MS = 3_000;
/** From the last upsert to the measurement at rest. */
const SETTLE_AT_REST_MS = 12_000;
const QUANTILES = Array.from({ length: 101 }, (_, i) => i / 100);

export type Lateness = { min: number; p50: number; p99: number; max: number };

export interface OccurrenceOutcome {
  /** Occurrences the rules give within the window, over every schedule. */
  expected: number;
  /** bench_occurrence rows (handler runs that committed) due within the window. */
  effects: number;
  /** Distinct (schedule, scheduled instant) among them. */
  distinct: number;
  /** Expected occurrences that ran. */
  matched: number;
  duplicates: number;
  missing: number;
  /** Ran, but not an instant the rule gives. */
  unexpected: number;
  /** context.occurrence.scheduledAt ≠ the task's due time. */
  dueMismatch: number;
  /** context.occurrence.previousAt ≠ the instant one period before. */
  previousMismatch: number;
  /** Their tasks in delayed_task: executed, cancelled (overlap skip), dead, still pending. */
  tasks: { total: number; executed: number; cancelled: number; dead: number; pending: number };
  lateness: Lateness | null;
  quantiles: number[];
}

export interface RecurringRun {
  /** `none`: the one-off tasks alone, no schedule (the spread, in this run). */
  key: 'none' | 'phases' | 'whole-second';
  label: string;
  rule: string;
  schedules: number;
  /** The upserts, one call each. */
  registerMs: number;
  /** From the last upsert until every schedule was planned to the window's horizon. */
  settleMs: number;
  settled: boolean;
  /** Pending occurrence tasks when the one-offs were scheduled (planned ahead). */
  plannedAhead: number;
  /** ANALYZEs of delayed_task while registering and planning (one every ANALYZE_EVERY_MS). */
  analyzes: number;
  /** Whether the occurrences that fell due before the window had all run before it (cap 60 s). */
  drained: boolean;
  /** Statement times from the first upsert until planned to the horizon (top 6). */
  whilePlanning: StatementTime[];
  oneOff: Outcome;
  oneOffCount: number;
  occurrences: OccurrenceOutcome;
  /** Statements sent and CPU used by the process during the 60 s window. */
  statementsPerSecond: number;
  cpuSeconds: number;
  statementTimes: StatementTime[];
}

export interface RecurringIdle {
  schedules: number;
  registerMs: number;
  /** Occurrence tasks planned when the measurement started (none expected). */
  planned: number;
  seconds: number;
  statementSource: 'pg_stat_statements' | 'pg driver';
  statementsPerSecond: number;
  xactCommitPerSecond: number;
  cpuSeconds: number;
  rssBytes: number;
  statementTimes: StatementTime[];
}

export interface RecurringResult {
  spanMs: number;
  tickMs: number;
  runs: RecurringRun[];
  floor: DueRun;
  idle: RecurringIdle[];
}

interface Variant {
  key: RecurringRun['key'];
  label: string;
  rule: string;
  schedules: Array<BenchSchedule & { periodMs: number }>;
}

function variants(ctx: RunContext): Variant[] {
  const spread = ctx.size(100, 10);
  const together = ctx.size(50, 5);
  const step = 400 / spread;
  return [
    { key: 'none', label: 'no schedule', rule: '', schedules: [] },
    {
      key: 'phases',
      label: `${spread} schedules every 1,000–${num(1000 + Math.round((spread - 1) * step))} ms (phases spread)`,
      rule: `every: ${1000}, ${1000 + Math.round(step)}, … ms`,
      schedules: Array.from({ length: spread }, (_, k) => {
        const periodMs = 1000 + Math.round(k * step);
        return { name: `bench.every.${k}`, every: periodMs, periodMs };
      }),
    },
    {
      key: 'whole-second',
      label: `${together} schedules on \`*/1 * * * * *\` (all due each whole second)`,
      rule: "cron: '*/1 * * * * *'",
      schedules: Array.from({ length: together }, (_, k) => ({
        name: `bench.cron.${k}`,
        cron: '*/1 * * * * *',
        periodMs: 1000,
      })),
    },
  ];
}

/** Every instant of each schedule in [fromMs, toMs): the multiples of its period. */
function expectedOccurrences(
  schedules: Variant['schedules'],
  fromMs: number,
  toMs: number,
): { names: string[]; instants: Date[] } {
  const names: string[] = [];
  const instants: Date[] = [];
  for (const s of schedules)
    for (let at = Math.ceil(fromMs / s.periodMs) * s.periodMs; at < toMs; at += s.periodMs) {
      names.push(s.name);
      instants.push(new Date(at));
    }
  return { names, instants };
}

async function createOccurrenceTable(client: pg.Client): Promise<void> {
  await client.query(`
    CREATE TABLE bench_occurrence (
      schedule_name text NULL,
      scheduled_at  timestamptz NULL,
      previous_at   timestamptz NULL,
      due_at        timestamptz NULL,
      effected_at   timestamptz NOT NULL
    )`);
}

/**
 * Until every schedule's next unplanned occurrence lies beyond the window
 * less a heartbeat (the planner has reached the horizon), or `capMs`.
 */
async function waitPlanned(client: pg.Client, capMs: number): Promise<boolean> {
  const deadline = Date.now() + capMs;
  for (;;) {
    const { rows } = await client.query<{ behind: number }>(
      `SELECT count(*)::int AS behind FROM delay_schedule
       WHERE next_at < now() + $1 * interval '1 millisecond'`,
      [WINDOW_MS - HEARTBEAT_MS - 5_000],
    );
    if (rows[0].behind === 0) return true;
    if (Date.now() > deadline) return false;
    await sleep(1000);
  }
}

/** ANALYZE delayed_task every `everyMs` on a connection of its own, until stopped; how many ran. */
function analyzeEvery(url: string, everyMs: number): { stop(): Promise<number> } {
  let stopped = false;
  let runs = 0;
  const loop = withClient(url, async (c) => {
    while (!stopped) {
      await c.query('ANALYZE delayed_task');
      runs++;
      const until = Date.now() + everyMs;
      while (!stopped && Date.now() < until) await sleep(100);
    }
  });
  return {
    async stop() {
      stopped = true;
      await loop;
      return runs;
    },
  };
}

/** Until no occurrence that fell due has yet to run, or `capMs`. */
async function waitOverdueDrained(client: pg.Client, capMs: number): Promise<boolean> {
  const deadline = Date.now() + capMs;
  for (;;) {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM delayed_task
       WHERE schedule_name IS NOT NULL AND due_at < now() - interval '1 second'
         AND executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`,
    );
    if (rows[0].n === 0) return true;
    if (Date.now() > deadline) return false;
    await sleep(500);
  }
}

async function pendingOccurrences(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM delayed_task
     WHERE schedule_name IS NOT NULL AND executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`,
  );
  return rows[0].n;
}

async function occurrencesDue(client: pg.Client, fromMs: number, toMs: number): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `SELECT count(DISTINCT (schedule_name, scheduled_at))::int AS n FROM bench_occurrence
     WHERE scheduled_at >= $1 AND scheduled_at < $2`,
    [new Date(fromMs), new Date(toMs)],
  );
  return rows[0].n;
}

async function readOccurrences(
  client: pg.Client,
  schedules: Variant['schedules'],
  fromMs: number,
  toMs: number,
): Promise<OccurrenceOutcome> {
  const { names, instants } = expectedOccurrences(schedules, fromMs, toMs);
  await client.query(
    `CREATE TEMP TABLE bench_expected AS
     SELECT * FROM unnest($1::text[], $2::timestamptz[]) AS e(schedule_name, scheduled_at)`,
    [names, instants],
  );
  await client.query(
    `CREATE TEMP TABLE bench_period AS
     SELECT * FROM unnest($1::text[], $2::int[]) AS p(schedule_name, period_ms)`,
    [schedules.map((s) => s.name), schedules.map((s) => s.periodMs)],
  );
  const from = new Date(fromMs);
  const to = new Date(toMs);
  const { rows } = await client.query(
    `WITH ran AS (
       SELECT * FROM bench_occurrence WHERE scheduled_at >= $1 AND scheduled_at < $2
     ), once AS (
       SELECT DISTINCT schedule_name, scheduled_at FROM ran
     )
     SELECT (SELECT count(*) FROM bench_expected)::int AS expected,
            (SELECT count(*) FROM ran)::int AS effects,
            (SELECT count(*) FROM once)::int AS distinct,
            (SELECT count(*) FROM once JOIN bench_expected USING (schedule_name, scheduled_at))::int AS matched,
            (SELECT count(*) FROM ran WHERE due_at IS DISTINCT FROM scheduled_at)::int AS due_mismatch,
            (SELECT count(*) FROM ran JOIN bench_period USING (schedule_name)
             WHERE previous_at IS DISTINCT FROM scheduled_at - period_ms * interval '1 millisecond')::int AS previous_mismatch,
            (SELECT percentile_cont($3::float8[]) WITHIN GROUP
               (ORDER BY extract(epoch FROM effected_at - scheduled_at) * 1000) FROM ran) AS q`,
    [from, to, QUANTILES],
  );
  const { rows: states } = await client.query(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE executed_at IS NOT NULL)::int AS executed,
            count(*) FILTER (WHERE cancelled_at IS NOT NULL)::int AS cancelled,
            count(*) FILTER (WHERE dead_at IS NOT NULL)::int AS dead
     FROM delayed_task WHERE schedule_name IS NOT NULL AND occurrence_at >= $1 AND occurrence_at < $2`,
    [from, to],
  );
  const r = rows[0];
  const s = states[0];
  const q = ((r.q as number[] | null) ?? []).map((v) => round(v, 1));
  return {
    expected: r.expected,
    effects: r.effects,
    distinct: r.distinct,
    matched: r.matched,
    duplicates: r.effects - r.distinct,
    missing: r.expected - r.matched,
    unexpected: r.distinct - r.matched,
    dueMismatch: r.due_mismatch,
    previousMismatch: r.previous_mismatch,
    tasks: {
      total: s.total,
      executed: s.executed,
      cancelled: s.cancelled,
      dead: s.dead,
      pending: s.total - s.executed - s.cancelled - s.dead,
    },
    lateness: q.length ? { min: q[0], p50: q[50], p99: q[99], max: q[100] } : null,
    quantiles: q,
  };
}

async function lateness(ctx: RunContext, v: Variant, count: number, spanMs: number) {
  const database = ctx.database(`recurring_${v.key.replace('-', '_')}`);
  const url = await freshDatabase(database);
  const { sut } = await SystemProcess.launch('project', url, { tickMs: TICK_MS });
  try {
    return await withClient(url, async (client): Promise<RecurringRun> => {
      await createOccurrenceTable(client);
      // Statistics kept up with the planning's inserts while the schedules are
      // registered and planned (see ANALYZE_EVERY_MS).
      const analyzer = analyzeEvery(url, ANALYZE_EVERY_MS);
      let registerMs: number;
      let settled: boolean;
      let settleMs: number;
      let analyzes: number;
      try {
        ({ ms: registerMs } = await sut.upsertSchedules(v.schedules));
        const settleStarted = Date.now();
        settled = await waitPlanned(client, ctx.size(120_000, 60_000));
        settleMs = Date.now() - settleStarted;
      } finally {
        analyzes = await analyzer.stop();
      }
      const plannedAhead = await pendingOccurrences(client);
      // Statement times from the first upsert to here.
      const whilePlanning = (await sut.statementTimes()).slice(0, 6);
      await client.query('ANALYZE delayed_task');
      const drained = await waitOverdueDrained(client, 60_000);
      log(
        `  ${v.label}: upserts ${num(registerMs / 1000, 1)} s, planned to the horizon ${settled ? `in ${num(settleMs / 1000, 1)} s more` : 'NOT reached'} (${analyzes} ANALYZEs), ${num(plannedAhead)} occurrences planned ahead; overdue ${drained ? 'drained' : 'NOT drained'}`,
      );
      const plan: TaskPlan = {
        count,
        firstDueMs: wholeSecondAfter(3_000),
        stepMs: spanMs / count,
      };
      await seedOrders(client, plan);
      await sut.schedule(plan, 'bulk');
      const fromMs = plan.firstDueMs;
      const toMs = fromMs + spanMs;
      await sleep(Math.max(0, fromMs - Date.now()));
      const before = await sut.usage();
      await sut.statementTimes();
      await sleepWithBar(`${v.key} window`, Math.max(0, toMs - Date.now()));
      const after = await sut.usage();
      const statementTimes = (await sut.statementTimes()).slice(0, 8);
      // The last due ones: one-offs, then occurrences (capped).
      await waitForEffects(client, count, `${v.key} one-offs`, 15_000);
      const expected = expectedOccurrences(v.schedules, fromMs, toMs).names.length;
      const deadline = Date.now() + 15_000;
      while ((await occurrencesDue(client, fromMs, toMs)) < expected && Date.now() < deadline)
        await sleep(200);
      await sut.stop();
      const occurrences = await readOccurrences(client, v.schedules, fromMs, toMs);
      const oneOff = await readOutcome(client, count);
      const seconds = (after.cpuMs - before.cpuMs) / 1000;
      const run: RecurringRun = {
        key: v.key,
        label: v.label,
        rule: v.rule,
        schedules: v.schedules.length,
        registerMs: round(registerMs),
        settleMs,
        settled,
        plannedAhead,
        analyzes,
        drained,
        whilePlanning,
        oneOff,
        oneOffCount: count,
        occurrences,
        statementsPerSecond: round(((after.statements - before.statements) / spanMs) * 1000, 1),
        cpuSeconds: round(seconds, 2),
        statementTimes,
      };
      log(
        `  ${v.key}: occurrences p50 ${ms(occurrences.lateness?.p50)} p99 ${ms(occurrences.lateness?.p99)} (${occurrences.effects} of ${occurrences.expected}), one-offs p50 ${ms(oneOff.lateness?.p50)} p99 ${ms(oneOff.lateness?.p99)}`,
      );
      return run;
    });
  } finally {
    await sut.stop();
    await dropDatabase(database);
  }
}

/** Daily crons 2 to 23 hours ahead of now (UTC), `count` of them, none within the hour's window. */
function farSchedules(count: number): BenchSchedule[] {
  const hour = new Date().getUTCHours();
  return Array.from({ length: count }, (_, k) => ({
    name: `bench.daily.${k}`,
    cron: `${Math.floor(k / 20) % 60} ${(hour + 3 + (k % 20)) % 24} * * *`,
  }));
}

async function atRest(ctx: RunContext, schedules: number, seconds: number): Promise<RecurringIdle> {
  const database = ctx.database(`recurring_idle_${schedules}`);
  const url = await freshDatabase(database);
  const { sut } = await SystemProcess.launch('project', url, { tickMs: TICK_MS });
  try {
    return await withClient(SERVER_URL, async (server) => {
      const registerMs = schedules ? (await sut.upsertSchedules(farSchedules(schedules))).ms : 0;
      // The registration's counters reach pg_stat_database when its idle
      // sessions flush them (within 10 s): wait past that, then measure.
      await sleep(SETTLE_AT_REST_MS);
      const planned = await withClient(url, async (c) => {
        const { rows } = await c.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM delayed_task WHERE schedule_name IS NOT NULL`,
        );
        return rows[0].n;
      });
      const extension0 = await statementsViaExtension(url);
      const u0 = await sut.usage();
      const x0 = await xactCommit(server, database);
      await sut.statementTimes();
      await sleepWithBar(`${num(schedules)} schedules at rest`, seconds * 1000);
      const u1 = await sut.usage();
      const x1 = await xactCommit(server, database);
      const statementTimes = await sut.statementTimes();
      const extension1 = extension0 === null ? null : await statementsViaExtension(url);
      const settledUsage = await sut.settledUsage();
      const viaExtension = extension0 !== null && extension1 !== null;
      const statements = viaExtension ? extension1 - extension0 - 2 : u1.statements - u0.statements;
      const figure: RecurringIdle = {
        schedules,
        registerMs: round(registerMs),
        planned,
        seconds,
        statementSource: viaExtension ? 'pg_stat_statements' : 'pg driver',
        statementsPerSecond: round(statements / seconds, 2),
        xactCommitPerSecond: round((x1 - x0) / seconds, 2),
        cpuSeconds: round((u1.cpuMs - u0.cpuMs) / 1000, 3),
        rssBytes: settledUsage.rss,
        statementTimes,
      };
      log(
        `  ${num(schedules)} schedules at rest: ${num(figure.statementsPerSecond)} statements/s, ${figure.cpuSeconds} CPU s${schedules ? `; registered in ${num(registerMs / 1000, 1)} s` : ''}`,
      );
      return figure;
    });
  } finally {
    await sut.stop();
    await dropDatabase(database);
  }
}

function latenessCells(l: Lateness | null | undefined) {
  return [ms(l?.min), ms(l?.p50), ms(l?.p99), ms(l?.max)];
}

export const recurring: Workload<RecurringResult> = {
  name: 'recurring',
  title: 'Recurring: schedules beside one-off tasks, and 1,000 schedules at rest (this project)',
  async run(ctx: RunContext) {
    const count = ctx.size(3_000, 300);
    const spanMs = ctx.size(SPAN_MS, 6_000);
    const runs: RecurringRun[] = [];
    for (const v of variants(ctx)) runs.push(await lateness(ctx, v, count, spanMs));
    // The floor at the first set's overall rate: one-offs plus its occurrences, evenly.
    const phases = runs.find((r) => r.key === 'phases')!;
    const floorCount = count + phases.occurrences.expected;
    const floor = await runDueTasks({
      system: 'timeout-floor',
      database: ctx.database('recurring_floor'),
      count: floorCount,
      stepMs: spanMs / floorCount,
      leadMs: 3_000,
      capMs: 30_000,
    });
    const seconds = ctx.size(60, 5);
    const idle = [await atRest(ctx, 0, seconds), await atRest(ctx, ctx.size(1_000, 100), seconds)];
    return { spanMs, tickMs: TICK_MS, runs, floor, idle };
  },
  markdown({ spanMs, tickMs, runs, floor, idle }) {
    const f = floor.outcome.lateness;
    const rows: Array<Array<string | number | null>> = [];
    for (const r of runs) {
      const o = r.occurrences;
      if (r.key === 'none') {
        rows.push([
          'one-off tasks alone, no schedule',
          `${num(r.oneOff.effected)} of ${num(r.oneOffCount)}`,
          ...latenessCells(r.oneOff.lateness),
          r.oneOff.duplicates,
          r.oneOff.missing,
        ]);
        continue;
      }
      rows.push([
        `${r.label}: occurrences`,
        `${num(o.effects)} of ${num(o.expected)}`,
        ...latenessCells(o.lateness),
        o.duplicates,
        o.missing,
      ]);
      rows.push([
        `… one-off tasks beside them`,
        `${num(r.oneOff.effected)} of ${num(r.oneOffCount)}`,
        ...latenessCells(r.oneOff.lateness),
        r.oneOff.duplicates,
        r.oneOff.missing,
      ]);
    }
    rows.push([
      `${floor.label}, ${num(floor.count)} evenly (the first set's rate)`,
      `${num(floor.outcome.effected)} of ${num(floor.count)}`,
      ...latenessCells(f),
      floor.outcome.duplicates,
      floor.outcome.missing,
    ]);
    const checks = table(
      [
        'set',
        'upserts',
        'planned to the horizon in',
        'occurrences planned ahead',
        'distinct (schedule, instant) = rows = expected',
        'unexpected instants',
        'scheduledAt ≠ due time',
        'previousAt ≠ one period before',
        'their tasks: executed / cancelled / dead / pending',
        'statements/s in the window',
        `CPU s in the ${spanMs / 1000} s`,
      ],
      runs
        .filter((r) => r.key !== 'none')
        .map((r) => {
          const o = r.occurrences;
          return [
            r.label,
            `${num(r.schedules)} in ${num(r.registerMs / 1000, 1)} s`,
            (r.settled
              ? `${num(r.settleMs / 1000, 1)} s more`
              : `not reached in ${num(r.settleMs / 1000, 0)} s`) +
              (r.drained ? '' : '; overdue **not drained** in 60 s'),
            r.plannedAhead,
            `${num(o.distinct)} = ${num(o.effects)} = ${num(o.expected)}${o.distinct === o.effects && o.effects === o.expected ? '' : ' **no**'}`,
            o.unexpected,
            o.dueMismatch,
            o.previousMismatch,
            `${num(o.tasks.executed)} / ${num(o.tasks.cancelled)} / ${num(o.tasks.dead)} / ${num(o.tasks.pending)}`,
            r.statementsPerSecond,
            r.cpuSeconds,
          ];
        }),
    );
    const [zero, many] = idle;
    const idleTable = table(
      [
        'schedules',
        'registered in',
        'statements/s',
        'xact_commit/s',
        `CPU s in ${zero?.seconds ?? 60} s`,
        'RSS at rest',
        'occurrences planned',
      ],
      [
        ...idle.map((i) => [
          num(i.schedules),
          i.schedules
            ? `${num(i.registerMs / 1000, 1)} s (${num(i.registerMs / i.schedules, 1)} ms per upsert)`
            : '—',
          i.statementsPerSecond,
          i.xactCommitPerSecond,
          i.cpuSeconds,
          mib(i.rssBytes),
          i.planned,
        ]),
        ...(zero && many
          ? [
              [
                'difference',
                '',
                num(many.statementsPerSecond - zero.statementsPerSecond, 2),
                num(many.xactCommitPerSecond - zero.xactCommitPerSecond, 2),
                num(many.cpuSeconds - zero.cpuSeconds, 3),
                `${num((many.rssBytes - zero.rssBytes) / 2 ** 20, 1)} MiB`,
                '',
              ],
            ]
          : []),
      ],
    );
    return [
      `This project at a ${tickMs / 1000} s tick (the default window of an hour). Schedules added at run time through \`DelaySchedules.upsert\`, beside ${num(runs[0]?.oneOffCount ?? 0)} one-off tasks due evenly over the same ${spanMs / 1000} s, in the same process, and the one-offs alone; each set on a fresh database. Lateness = effect − the occurrence's scheduled instant (\`context.occurrence.scheduledAt\`), over the occurrences due within the ${spanMs / 1000} s; the one-offs' as in \`spread\`. The run starts once every schedule is planned to the window's horizon and the occurrences that fell due meanwhile have run. While the schedules are registered and planned the bench runs \`ANALYZE delayed_task\` every ${ANALYZE_EVERY_MS / 1000} s (and once more at the end), as autovacuum would, sooner: without statistics for the planned rows, each occurrence's overlap check scans every pending task (see bench/README.md).`,
      '',
      table(['', 'effected', 'lateness min', 'p50', 'p99', 'max', 'duplicates', 'missing'], rows),
      '',
      checks,
      ...runs
        .filter((r) => r.key !== 'none')
        .flatMap((r) => [
          ...statementTable(
            `\n${r.label}: where its connections spent their time in the ${spanMs / 1000} s (top 8):\n`,
            r.statementTimes,
          ),
          ...statementTable(
            `\n… and from the first upsert until planned to the horizon (top 6):\n`,
            r.whilePlanning,
          ),
        ]),
      '',
      `At rest: the same app with no schedule and with ${num(many?.schedules ?? 0)} (daily crons, each 2 to 23 hours ahead, so none within the window), ${zero?.seconds ?? 60} s each, ${SETTLE_AT_REST_MS / 1000} s after the last upsert (sessions flush their counters to pg_stat_database within 10 s). Statements counted by: ${zero?.statementSource ?? 'pg driver'}.`,
      '',
      idleTable,
      ...statementTable(
        `\nStatements at rest with ${num(many?.schedules ?? 0)} schedules:\n`,
        many?.statementTimes,
      ),
    ].join('\n');
  },
};
