/**
 * Child process entry: hosts one system under test and answers the parent's
 * commands over IPC. Every statement sent through `pg` in this process is
 * counted (all systems here, and TypeORM, use `pg`), and timed by kind (its
 * first words) from send to reply, so a run can show where its connections'
 * time went.
 */
import { Session } from 'node:inspector';
import pg from 'pg';
import { tasksBetween, type TaskPlan } from '../harness/plan.js';
import { runBare, type BareMode } from './bare.js';
import type { BenchSchedule, SystemName, SystemSettings, SystemUnderTest } from './system.js';

export interface StatementTime {
  statement: string;
  count: number;
  totalMs: number;
}

let statements = 0;
let times = new Map<string, StatementTime>();
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements++;
  const first = args[0] as string | { text?: string } | undefined;
  const text = typeof first === 'string' ? first : (first?.text ?? '');
  const statement = text.trim().replace(/\s+/g, ' ').slice(0, 48);
  const started = performance.now();
  const record = () => {
    const entry = times.get(statement) ?? { statement, count: 0, totalMs: 0 };
    entry.count++;
    entry.totalMs += performance.now() - started;
    times.set(statement, entry);
  };
  // pg.Pool#query calls its client's query with a callback and gets no promise back.
  const last = args[args.length - 1];
  if (typeof last === 'function')
    args[args.length - 1] = function (this: unknown, ...reply: unknown[]) {
      record();
      return (last as (...a: unknown[]) => unknown).apply(this, reply);
    };
  const result = (query as (...a: unknown[]) => unknown).apply(this, args);
  if (result instanceof Promise) result.then(record, record);
  return result;
} as typeof query;

async function load(system: SystemName, settings: SystemSettings): Promise<SystemUnderTest> {
  switch (system) {
    case 'project':
      return (await import('./project.js')).createProject(settings);
    case 'bullmq':
      return (await import('./bullmq.js')).createBullmq(settings);
    case 'bullmq-pg':
      return (await import('./bullmq-pg.js')).createBullmqPg(settings);
    case 'pg-boss':
      return (await import('./pg-boss.js')).createPgBoss(settings);
    case 'graphile-worker':
      return (await import('./graphile-worker.js')).createGraphileWorker(settings);
    case 'cron-scan':
      return (await import('./cron-scan.js')).createCronScan(settings);
    case 'timeout-floor':
      return (await import('./timeout-floor.js')).createTimeoutFloor(settings);
    case 'nest-floor':
      return (await import('./nest-floor.js')).createNestFloor(settings);
  }
}

export interface Usage {
  rss: number;
  /** settledUsage only: RSS after the forced full GCs, before the low-memory one. */
  rssAfterFullGc?: number;
  maxRss: number;
  heapUsed: number;
  cpuMs: number;
  statements: number;
}

function usage(): Usage {
  const cpu = process.cpuUsage();
  return {
    rss: process.memoryUsage().rss,
    maxRss: process.resourceUsage().maxRSS * 1024,
    heapUsed: process.memoryUsage().heapUsed,
    cpuMs: (cpu.user + cpu.system) / 1000,
    statements,
  };
}

/**
 * V8's low-memory GC, the one the inspector's "collect garbage" runs. Forced
 * full GCs (`gc()`) leave the young generation at whatever size the last
 * allocation burst grew it to (up to 32 MiB of RSS here) until V8's memory
 * reducer shrinks it on its own timer, if ever; this one shrinks it now, so
 * RSS at rest compares across systems and runs.
 */
async function lowMemoryGc(): Promise<void> {
  const session = new Session();
  session.connect();
  try {
    await new Promise<void>((resolve, reject) =>
      session.post('HeapProfiler.collectGarbage', (error) => (error ? reject(error) : resolve())),
    );
  } finally {
    session.disconnect();
  }
}

/** Through the system's API, or (`bare-`) by bare INSERTs of the same rows. */
export type ScheduleMode = 'one' | 'bulk' | 'bare-one' | 'bare-bulk';

/** Schedules the plan's tasks: one call each with `inFlight` outstanding, or bulk calls of `chunk`. */
async function schedule(
  sut: SystemUnderTest,
  plan: TaskPlan,
  mode: ScheduleMode,
  inFlight: number,
  chunk: number,
) {
  const bare = mode === 'bare-one' || mode === 'bare-bulk';
  const one = bare ? sut.bareScheduleOne?.bind(sut) : sut.scheduleOne.bind(sut);
  const many = bare ? sut.bareScheduleMany?.bind(sut) : sut.scheduleMany.bind(sut);
  if (!one || !many) throw new Error(`this system has no bare schedule (${mode})`);
  const started = performance.now();
  if (mode === 'bulk' || mode === 'bare-bulk') {
    for (let from = 1; from <= plan.count; from += chunk)
      await many(tasksBetween(plan, from, from + chunk - 1));
  } else {
    let next = 1;
    const worker = async () => {
      for (let id = next++; id <= plan.count; id = next++) await one(tasksBetween(plan, id, id)[0]);
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
  }
  return { ms: performance.now() - started, endedAtMs: Date.now() };
}

let sut: SystemUnderTest | undefined;

const commands: Record<string, (args: any) => Promise<unknown>> = {
  async start({ system, settings }: { system: SystemName; settings: SystemSettings }) {
    const startedAtMs = Date.now();
    const started = performance.now();
    sut = await load(system, settings);
    await sut.start();
    return { ms: performance.now() - started, startedAtMs, readyAtMs: Date.now() };
  },
  async schedule({ plan, mode, inFlight = 50, chunk = 1000 }) {
    return schedule(sut!, plan, mode, inFlight, chunk);
  },
  /** Adds recurring schedules one call each, in order; how long that took. */
  async schedules({ schedules }: { schedules: BenchSchedule[] }) {
    if (!sut?.upsertSchedules) throw new Error('this system has no recurring schedules');
    const started = performance.now();
    await sut.upsertSchedules(schedules);
    return { ms: performance.now() - started };
  },
  async usage() {
    return usage();
  },
  /** Statement times since the last call, most time first. */
  async statementTimes() {
    const list = [...times.values()].sort((a, b) => b.totalMs - a.totalMs);
    times = new Map();
    return list.map((t) => ({ ...t, totalMs: Math.round(t.totalMs) }));
  },
  async gc() {
    for (let i = 0; i < 3; i++) global.gc?.();
    const rssAfterFullGc = usage().rss;
    await lowMemoryGc();
    return { ...usage(), rssAfterFullGc };
  },
  async bare({
    url,
    mode,
    count,
    loops,
  }: {
    url: string;
    mode: BareMode;
    count: number;
    loops: number;
  }) {
    return runBare(url, mode, count, loops);
  },
  async stop() {
    await sut?.stop();
    sut = undefined;
    return usage();
  },
};

process.on('message', (message: { id: number; command: string; args: unknown }) => {
  const handler = commands[message.command];
  Promise.resolve()
    .then(() =>
      handler
        ? handler(message.args)
        : Promise.reject(new Error(`unknown command ${message.command}`)),
    )
    .then(
      (result) => process.send!({ id: message.id, ok: true, result }),
      (error: unknown) =>
        process.send!({
          id: message.id,
          ok: false,
          error: error instanceof Error ? (error.stack ?? error.message) : String(error),
        }),
    );
});
process.on('disconnect', () => process.exit(0));
