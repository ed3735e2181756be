import type { DelayRuntime } from '../runtime/delay.runtime.js';
import type { ExecutionCounts, TypeCounts } from '../observer/observer-calls.js';
import type { Sql } from '../store/sql.js';
import { PENDING } from '../tasks/task-row.js';
import type { ManualClock } from './manual-clock.js';

/** Stops an `advance` may make (two an occurrence: its plan and its run): 48 hours of a 10-minute schedule fit, a runaway throws. */
export const DEFAULT_MAX_STEPS = 1000;

/** A run's outcomes, in the order messages name them. */
const OUTCOMES = ['executed', 'failed', 'deadLettered', 'snoozed', 'skipped'] as const;

/** What ran during an `advance` or `runDue`, in this instance. */
export interface RunReport extends TypeCounts {
  byType: Record<string, TypeCounts>;
}

/**
 * Moves `clock` to `target` as time passes in a running app: it stops at each
 * instant something falls due (a task or an occurrence, as the tables say, or
 * a rate credit a line of the limit gate waits for), runs it and settles, then
 * looks for the next. Throws after `maxSteps` stops,
 * leaving the clock where it stopped.
 */
export async function walkTo(
  runtime: DelayRuntime,
  clock: ManualClock,
  target: number,
  maxSteps: number,
  call: string,
): Promise<RunReport> {
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 1)
    throw new RangeError(`${call}: maxSteps must be a positive integer; got ${String(maxSteps)}`);
  const { pool } = runtime.ctx.db;
  const { windowMs } = runtime.ctx.options;
  const start = clock.now();
  const before = runtime.dispatcher.stats.snapshot();
  await runtime.settle();
  for (let steps = 0; ; steps++) {
    const now = clock.now();
    const due = await nextDueInstant(
      pool,
      new Date(now),
      new Date(target),
      windowMs,
      runtime.ctx.policy.handledTypes,
    );
    const wake = runtime.dispatcher.gate.nextCreditMs();
    const found = Math.min(due ?? Infinity, wake > now && wake <= target ? wake : Infinity);
    if (found === Infinity) break;
    if (steps === maxSteps) {
      const ran = difference(runtime.dispatcher.stats.snapshot(), before);
      const span = [pool, new Date(start), new Date(now)] as const;
      const [schedules, waiting] = await Promise.all([
        busiestSchedules(...span),
        waitingTypes(...span),
      ]);
      throw new Error(runaway(call, maxSteps, start, now, target, ran, schedules, waiting));
    }
    // A due time written by SQL may carry microseconds: never stop before it.
    clock.set(Math.max(now, Math.ceil(found)));
    await runtime.settle();
  }
  if (clock.now() < target) {
    clock.set(target);
    await runtime.settle();
  }
  return difference(runtime.dispatcher.stats.snapshot(), before);
}

/** What ran between two snapshots of the dispatcher's counts. */
export function difference(after: ExecutionCounts, before: ExecutionCounts): RunReport {
  const sub = (a: TypeCounts, b: TypeCounts | undefined) =>
    Object.fromEntries(OUTCOMES.map((o) => [o, a[o] - (b?.[o] ?? 0)])) as unknown as TypeCounts;
  const byType: Record<string, TypeCounts> = {};
  for (const [type, counts] of Object.entries(after.byType)) {
    const delta = sub(counts, before.byType[type]);
    if (OUTCOMES.some((o) => delta[o] !== 0)) byType[type] = delta;
  }
  return { ...sub(after, before), byType };
}

// The walk's statements.

/**
 * The next instant in (`now`, `until`] at which a pending task of a handled
 * type falls due or a running schedule's occurrence comes within the window;
 * null if none. What is due by `now` and has not run waits for its own timer.
 */
async function nextDueInstant(
  sql: Sql,
  now: Date,
  until: Date,
  windowMs: number,
  types: readonly string[],
): Promise<number | null> {
  const [row] = await sql.rows<{ ms: number | null }>(
    `SELECT (extract(epoch FROM least(
       (SELECT min(due_at) FROM delayed_task
        WHERE ${PENDING} AND due_at > $1 AND due_at <= $2 AND type = ANY($4::text[])),
       (SELECT min(plan_at) FROM (
          SELECT next_at - $3 * interval '1 millisecond' + interval '1 millisecond' AS plan_at
          FROM delay_schedule WHERE NOT paused AND plan_retry_at IS NULL) s
        WHERE plan_at > $1 AND plan_at <= $2)
     )) * 1000)::float8 AS ms`,
    [now, until, windowMs, types],
  );
  return row.ms;
}

/** The schedules whose occurrences fell due in [from, to], most first (at most three). */
function busiestSchedules(
  sql: Sql,
  from: Date,
  to: Date,
): Promise<Array<{ name: string; n: number }>> {
  return sql.rows(
    `SELECT schedule_name AS name, count(*)::int AS n FROM delayed_task
     WHERE schedule_name IS NOT NULL AND due_at >= $1 AND due_at <= $2
     GROUP BY schedule_name ORDER BY n DESC, name LIMIT 3`,
    [from, to],
  );
}

/** The types whose tasks fell due in [from, to] and are still pending (waiting), most first (at most three). */
function waitingTypes(sql: Sql, from: Date, to: Date): Promise<Array<{ type: string; n: number }>> {
  return sql.rows(
    `SELECT type, count(*)::int AS n FROM delayed_task
     WHERE ${PENDING} AND due_at >= $1 AND due_at <= $2
     GROUP BY type ORDER BY n DESC, type LIMIT 3`,
    [from, to],
  );
}

/**
 * An advance that reached its `maxSteps`: what stepped the clock so often in
 * its span (at most three schedules, types that ran, types still waiting),
 * and what to do about it.
 */
function runaway(
  call: string,
  maxSteps: number,
  start: number,
  now: number,
  target: number,
  ran: RunReport,
  schedules: Array<{ name: string; n: number }>,
  waiting: Array<{ type: string; n: number }>,
): string {
  const types = Object.entries(ran.byType)
    .map(([type, counts]) => ({ type, counts, n: OUTCOMES.reduce((n, o) => n + counts[o], 0) }))
    .sort((a, b) => b.n - a.n || a.type.localeCompare(b.type))
    .slice(0, 3);
  const named = [
    schedules.length > 0
      ? `schedule ${schedules.map((s) => `${s.name} (${s.n} occurrences)`).join(', ')}`
      : undefined,
    types.length > 0
      ? `type ${types.map((t) => `${t.type} (${t.n} runs: ${outcomes(t.counts)})`).join(', ')}`
      : undefined,
  ].filter(Boolean);
  const fired =
    named.length > 0
      ? `What fired most: ${named.join('; ')}. `
      : waiting.length > 0
        ? `Nothing ran: tasks fell due and waited, of type ${waiting.map((w) => `${w.type} (${w.n})`).join(', ')}, each a step (a paused or limited type: DelayLimits.resume, or move less time). `
        : 'Nothing ran. ';
  const remedy =
    schedules.length > 0
      ? `Leave the schedules out of this move ({ schedules: false }), pause one (DelaySchedules.pause('${schedules[0].name}')), move less time, or raise the cap ({ maxSteps }).`
      : types.length > 0
        ? `Each run that makes the task due again within the span (a snooze, a retry, a task that schedules another) is a step: move less time, or raise the cap ({ maxSteps }).`
        : 'Move less time, or raise the cap ({ maxSteps }).';
  return (
    `DelayTester.${call} stopped after ${maxSteps} steps (maxSteps) at ${iso(now)}, ` +
    `${target - now} ms short of ${iso(target)} (started at ${iso(start)}). ` +
    fired +
    remedy
  );
}

/** `3 executed, 1 failed`: the outcomes that happened. */
function outcomes(counts: TypeCounts): string {
  return OUTCOMES.filter((o) => counts[o] > 0)
    .map((o) => `${counts[o]} ${o}`)
    .join(', ');
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
