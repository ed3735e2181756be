/**
 * One system, one batch of due tasks, one fresh database: start the system,
 * seed bench_order, schedule through the system's bulk API, wait for the
 * effects, stop it, read what happened from bench_order.
 */
import type pg from 'pg';
import { BackendCpu } from './backend-cpu.js';
import { SystemProcess } from './child.js';
import {
  dropDatabase,
  freshDatabase,
  readOutcome,
  round,
  seedOrders,
  withClient,
  type Outcome,
} from './db.js';
import { wholeSecondAfter, type TaskPlan } from './plan.js';
import { waitForEffects } from './wait.js';
import { label, type SystemName, type SystemSettings } from '../systems/system.js';
import type { StatementTime } from '../systems/sut-main.js';

export interface DueRun {
  system: SystemName;
  label: string;
  tickMs?: number;
  ballast?: number;
  /** This project with metrics and events on (SystemSettings.observe). */
  observe?: boolean;
  count: number;
  /** How long the bulk scheduling took, and by how much it ended after the first due time (0 = in time). */
  scheduleMs: number;
  scheduledLateMs: number;
  capped: boolean;
  outcome: Outcome;
  /** Last effect − first due time. */
  drainMs: number | null;
  /** Effects per second between the first and the last effect. */
  effectsPerSecond: number | null;
  /** Postgres statements the system's process sent (scheduling included), per task. */
  statementsPerTask: number;
  /** CPU time of the system's process from scheduling to the last effect. */
  cpuSeconds: number;
  /** The statements its connections spent most time on, from send to reply (top 6). */
  statementTimes: StatementTime[];
}

export interface DueRunOptions {
  system: SystemName;
  tickMs?: number;
  /** This project only: tasks held in its wheel beside the measured ones. */
  ballast?: number;
  /** This project with metrics and events on (SystemSettings.observe). */
  observe?: boolean;
  database: string;
  count: number;
  /** Spacing of due times (0 = all due at the same instant). */
  stepMs: number;
  /** Time between now and the first due time, for seeding and scheduling. */
  leadMs: number;
  /** Give up waiting after this long past the last due time. */
  capMs: number;
  /** Runs after seeding, just before scheduling (the harness's own connection given: to leave it out). */
  beforeSchedule?: (client: pg.Client) => Promise<void>;
  /** Runs after the effects are in and measured, before the system stops (to let it finish other work). */
  beforeStop?: () => Promise<void>;
}

/**
 * runDueTasks, and the CPU ms the database's backends spent from scheduling
 * to the last effect (/proc: Postgres on this host).
 */
export async function runDueTasksWithServerCpu(
  o: Omit<DueRunOptions, 'beforeSchedule' | 'beforeStop'>,
): Promise<{ run: DueRun; serverMs: number }> {
  let server: BackendCpu | undefined;
  let serverMs = 0;
  const run = await runDueTasks({
    ...o,
    async beforeSchedule(client) {
      const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      server = new BackendCpu(o.database, [pid]);
      await server.start();
    },
    async beforeStop() {
      serverMs = (await server?.stop()) ?? 0;
    },
  });
  return { run, serverMs };
}

/** A burst's figures a task, as bench:burst-rounds and bench:ab print them. */
export function burstFigures({ run, serverMs }: { run: DueRun; serverMs: number }, count: number) {
  return {
    drainMs: run.drainMs,
    cpuUsPerTask: Math.round((run.cpuSeconds * 1e6) / count),
    serverUsPerTask: Math.round((serverMs * 1e3) / count),
    statementsPerTask: run.statementsPerTask,
    missing: run.outcome.missing,
    duplicates: run.outcome.duplicates,
  };
}

export async function runDueTasks(o: DueRunOptions): Promise<DueRun> {
  const url = await freshDatabase(o.database);
  try {
    return await runDueTasksOn(url, o);
  } finally {
    await dropDatabase(o.database);
  }
}

/**
 * The same on a database the caller prepared (and drops): bench_order must
 * not exist yet. `extra` reaches the system's settings (this project's
 * retention, for one).
 */
export async function runDueTasksOn(
  url: string,
  o: Omit<DueRunOptions, 'database'>,
  extra: Partial<SystemSettings> = {},
): Promise<DueRun> {
  const name =
    label(o.system, o.tickMs, o.observe) +
    (o.ballast ? `, ${o.ballast.toLocaleString('en-US')} more held` : '');
  const { sut } = await SystemProcess.launch(o.system, url, {
    ...(o.tickMs === undefined ? {} : { tickMs: o.tickMs }),
    ...(o.ballast ? { ballast: o.ballast } : {}),
    ...(o.observe ? { observe: true } : {}),
    ...extra,
  });
  try {
    return await withClient(url, async (client) => {
      const plan: TaskPlan = {
        count: o.count,
        firstDueMs: wholeSecondAfter(o.leadMs),
        stepMs: o.stepMs,
      };
      await seedOrders(client, plan);
      await o.beforeSchedule?.(client);
      const before = await sut.usage();
      await sut.statementTimes();
      const scheduled = await sut.schedule(plan, 'bulk');
      const lastDueMs = plan.firstDueMs + (plan.count - 1) * plan.stepMs;
      const waitMs = Math.max(0, lastDueMs - Date.now()) + o.capMs;
      const waited = await waitForEffects(
        client,
        o.count,
        `${name} ${o.count.toLocaleString('en-US')}`,
        waitMs,
      );
      const after = await sut.usage();
      const statementTimes = (await sut.statementTimes()).slice(0, 6);
      await o.beforeStop?.();
      await sut.stop();
      const outcome = await readOutcome(client, o.count);
      const span =
        outcome.firstEffectMs !== null && outcome.lastEffectMs !== null
          ? outcome.lastEffectMs - outcome.firstEffectMs
          : null;
      return {
        system: o.system,
        label: name,
        tickMs: o.tickMs,
        ballast: o.ballast,
        observe: o.observe,
        count: o.count,
        scheduleMs: round(scheduled.ms),
        scheduledLateMs: Math.max(0, round(scheduled.endedAtMs - plan.firstDueMs)),
        capped: waited.capped,
        outcome,
        drainMs:
          outcome.lastEffectMs === null ? null : round(outcome.lastEffectMs - plan.firstDueMs),
        effectsPerSecond: span ? round((outcome.effected / span) * 1000) : null,
        statementsPerTask: round((after.statements - before.statements) / o.count, 2),
        cpuSeconds: round((after.cpuMs - before.cpuMs) / 1000, 2),
        statementTimes,
      };
    });
  } finally {
    await sut.stop();
  }
}
