/**
 * `npm run bench:limits [-- <count> <rounds>] [--quick] [--only burst|idle]
 * [--window <s>] [--waiting <n>] [--rate-starts <n>]`: what shared limits
 * (issue 21) cost this project.
 *
 * 1. Burst: `count` tasks (20,000 by default) due at one whole second, the
 *    effect through the handler's manager, as the burst workload runs them,
 *    in each round (1 by default) on a fresh database each: no limit first,
 *    then the limited ones (in reverse order every other round), then no
 *    limit again:
 *    - `none`: no limit (the batched claim, up to 50 tasks per transaction);
 *    - `typeModule`: a per-type `concurrency` of 10, the module's own
 *      concurrency, so it binds no more than the engine would;
 *    - `type4`: a per-type `concurrency: 4`, which binds;
 *    - `perKey`: `concurrency: 2` per key, 20 keys (orderId mod 20);
 *    - `rate`: `rate: { starts: 1000, per: 1 }` (1,000,000 starts a second;
 *      `--rate-starts` changes the 1,000), which never binds: the credit
 *      ledger's own cost.
 *    A limited type's tasks go through the limit gate, whose claims take one
 *    line's tasks under its slots and credits, so slower than batched is
 *    expected. The figures are each limit's ratios to the mean of the two
 *    unlimited runs of its round (their difference is the round's noise),
 *    medians over rounds.
 * 2. Idle while waiting: `waiting` tasks (10,000) due now behind a full
 *    concurrency limit of 1 (the first one's handler holds the only slot
 *    for the whole window), and separately of a paused type
 *    (DelayLimits.pause), beside the same app with nothing waiting; on one
 *    instance and on three (each holding a third of the tasks, so two of
 *    them find the slot busy elsewhere). `window` s measured (30 by default),
 *    from 11 s after the gates settled, after a full GC in each instance.
 *
 * Each app instance runs in a child process of its own (this same file,
 * forked), with a pool of 10 and concurrency 10 as in the other benches.
 * Statements are counted at the `pg` driver in the children (Client#query
 * wrapped, as bench/workloads/idle.ts does without pg_stat_statements), with
 * `pg_stat_database.xact_commit` alongside; CPU is the children's
 * process.cpuUsage() and, when Postgres runs on this host, the CPU of the
 * bench database's backends from /proc/<pid>/stat, sampled every 500 ms
 * (the bench's own polling connection left out). Reported, never asserted.
 * Writes bench/results/limits-<timestamp>.json and prints markdown tables.
 */
import 'reflect-metadata';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { BackendCpu } from './harness/backend-cpu.js';
import { ChildRpc } from './harness/child-rpc.js';
import { Injectable, Module, type DynamicModule, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import pg from 'pg';
import {
  DelayLimits,
  DelayModule,
  DelayService,
  DelayedTaskHandler,
  type TaskContext,
} from 'nest-delay';
import { dataSourceOptions } from '../src/database/data-source-options.js';
import {
  EFFECT_SQL,
  SERVER_URL,
  dropDatabase,
  freshDatabase,
  readOutcome,
  round,
  seedOrders,
  withClient,
} from './harness/db.js';

const IS_CHILD = process.env.BENCH_LIMITS_CHILD === '1';
const POOL_SIZE = 10;
const CONCURRENCY = 10;
const KEYS = 20;
const EFFECT_TYPE = 'bench.limits.effect';
const HOLD_TYPE = 'bench.limits.hold';
const PAUSED_TYPE = 'bench.limits.paused';

// ---------------------------------------------------------------------------
// The child: one app instance, answering the parent over IPC.
// ---------------------------------------------------------------------------

let statements = 0;
let kinds = new Map<string, number>();
if (IS_CHILD) {
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    statements++;
    const first = args[0] as string | { text?: string } | undefined;
    const text = typeof first === 'string' ? first : (first?.text ?? '');
    // Numbers inlined in a statement (a note's lock) would split one kind into many.
    const kind = text.trim().replace(/\s+/g, ' ').replace(/\d+/g, 'N').slice(0, 100);
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
}

type Payload = { orderId: number };
const effect = (payload: Payload, { manager }: TaskContext) =>
  manager.query(EFFECT_SQL, [payload.orderId]);

@Injectable()
class Unlimited {
  @DelayedTaskHandler(EFFECT_TYPE)
  run(payload: Payload, ctx: TaskContext) {
    return effect(payload, ctx);
  }
}

@Injectable()
class TypeAtModuleConcurrency {
  @DelayedTaskHandler(EFFECT_TYPE, { limit: { concurrency: CONCURRENCY } })
  run(payload: Payload, ctx: TaskContext) {
    return effect(payload, ctx);
  }
}

@Injectable()
class TypeOfFour {
  @DelayedTaskHandler(EFFECT_TYPE, { limit: { concurrency: 4 } })
  run(payload: Payload, ctx: TaskContext) {
    return effect(payload, ctx);
  }
}

@Injectable()
class PerKey {
  @DelayedTaskHandler(EFFECT_TYPE, {
    limit: { concurrency: 2, key: (payload: Payload) => `k${payload.orderId % KEYS}` },
  })
  run(payload: Payload, ctx: TaskContext) {
    return effect(payload, ctx);
  }
}

if (!IS_CHILD && process.argv.includes('--rate-starts'))
  process.env.BENCH_LIMITS_RATE_STARTS = process.argv[process.argv.indexOf('--rate-starts') + 1];
/** The loose rate's credits (--rate-starts, passed to the instances by BENCH_LIMITS_RATE_STARTS): `starts` per 1 ms. */
const RATE_STARTS = Number(process.env.BENCH_LIMITS_RATE_STARTS ?? 1000);

@Injectable()
class LooseRate {
  @DelayedTaskHandler(EFFECT_TYPE, { limit: { rate: { starts: RATE_STARTS, per: 1 } } })
  run(payload: Payload, ctx: TaskContext) {
    return effect(payload, ctx);
  }
}

/** The hold type's handlers wait here until the parent releases them (or their signal aborts). */
const hold = { released: false, running: 0, started: 0, wake: new Set<() => void>() };

@Injectable()
class IdleHandlers {
  /** Holds the type's only slot until released: everything else of the type waits behind it. */
  @DelayedTaskHandler(HOLD_TYPE, { limit: { concurrency: 1 }, timeout: '10m' })
  async holdSlot(_payload: Payload, { signal }: TaskContext): Promise<void> {
    hold.started++;
    if (hold.released) return;
    hold.running++;
    try {
      await new Promise<void>((resolve) => {
        const done = () => {
          hold.wake.delete(done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        hold.wake.add(done);
        signal.addEventListener('abort', done);
      });
    } finally {
      hold.running--;
    }
  }

  /** Paused for the whole measurement: never runs within it. */
  @DelayedTaskHandler(PAUSED_TYPE)
  paused(): void {}
}

const BURSTS = {
  none: { label: 'no limit', handlers: Unlimited },
  typeModule: {
    label: `per type, concurrency ${CONCURRENCY} (= module's)`,
    handlers: TypeAtModuleConcurrency,
  },
  type4: { label: 'per type, concurrency 4', handlers: TypeOfFour },
  perKey: { label: `per key, ${KEYS} keys × concurrency 2`, handlers: PerKey },
  rate: {
    label: `rate ${RATE_STARTS.toLocaleString('en-US')} per 1 ms (${(RATE_STARTS * 1000).toLocaleString('en-US')}/s)`,
    handlers: LooseRate,
  },
} as const satisfies Record<string, { label: string; handlers: Type }>;
type BurstName = keyof typeof BURSTS;
const BURST_NAMES = Object.keys(BURSTS) as BurstName[];

@Module({})
class LimitsBenchModule {
  static forRoot(url: string, handlers: Type): DynamicModule {
    return {
      module: LimitsBenchModule,
      imports: [
        TypeOrmModule.forRoot({
          ...dataSourceOptions({ url, poolSize: POOL_SIZE, migrationsRun: true }),
          retryAttempts: 0,
        }),
        DelayModule.forRoot({ tickMs: 1000, concurrency: CONCURRENCY }),
      ],
      providers: [handlers],
    };
  }
}

function childMain(): void {
  let app: Awaited<ReturnType<typeof NestFactory.createApplicationContext>> | undefined;
  const commands: Record<string, (args: any) => Promise<unknown>> = {
    async start({ url, app: which }: { url: string; app: BurstName | 'idle' }) {
      const handlers = which === 'idle' ? IdleHandlers : BURSTS[which].handlers;
      app = await NestFactory.createApplicationContext(LimitsBenchModule.forRoot(url, handlers), {
        logger: ['error', 'warn'],
      });
      return null;
    },
    /** Tasks orderId from..from+count-1 of `type`, due at `dueMs` (or now), by the bulk API in calls of 1,000. */
    async schedule({
      type,
      from,
      count,
      dueMs,
    }: {
      type: string;
      from: number;
      count: number;
      dueMs?: number;
    }) {
      const delay = app!.get(DelayService);
      const started = performance.now();
      for (let i = 0; i < count; i += 1000) {
        const runAt = dueMs ?? Date.now();
        await delay.scheduleMany(
          Array.from({ length: Math.min(1000, count - i) }, (_, j) => ({
            type,
            payload: { orderId: from + i + j },
            runAt,
          })),
        );
      }
      return { ms: performance.now() - started, endedAtMs: Date.now() };
    },
    /** A full GC, so no scene's window pays for the garbage its setup left. */
    async gc() {
      global.gc?.();
      return null;
    },
    async usage() {
      const cpu = process.cpuUsage();
      return { cpuMs: (cpu.user + cpu.system) / 1000, statements };
    },
    /** Statements by kind since the last call. */
    async kinds() {
      const list = [...kinds.entries()].map(([statement, count]) => ({ statement, count }));
      kinds = new Map();
      return list.sort((a, b) => b.count - a.count);
    },
    async waiting({ type }: { type: string }) {
      const info = await app!.get(DelayLimits).get(type);
      return {
        waiting: info.waiting,
        waitingHere: info.waitingHere,
        holding: hold.running,
        started: hold.started,
      };
    },
    async pause({ type }: { type: string }) {
      await app!.get(DelayLimits).pause(type);
      return null;
    },
    async release() {
      hold.released = true;
      for (const wake of [...hold.wake]) wake();
      return null;
    },
    async stop() {
      await app?.close();
      app = undefined;
      return null;
    },
  };
  process.on('message', (message: { id: number; command: string; args: unknown }) => {
    Promise.resolve()
      .then(() => commands[message.command](message.args))
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
}

// ---------------------------------------------------------------------------
// The parent: instances, measurements, results.
// ---------------------------------------------------------------------------

interface Usage {
  cpuMs: number;
  statements: number;
}
interface Kind {
  statement: string;
  count: number;
}

/** One app instance in a child process of its own. */
class Instance {
  private readonly rpc: ChildRpc;

  private constructor(child: ChildProcess) {
    this.rpc = new ChildRpc(child, 'instance');
  }

  static async launch(url: string, app: BurstName | 'idle'): Promise<Instance> {
    const child = fork(fileURLToPath(import.meta.url), [], {
      execArgv: ['--expose-gc'],
      env: { ...process.env, BENCH_LIMITS_CHILD: '1' },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const instance = new Instance(child);
    try {
      await instance.call('start', { url, app });
    } catch (error) {
      await instance.stop();
      throw error;
    }
    return instance;
  }

  call<T>(command: string, args: unknown = {}): Promise<T> {
    return this.rpc.request({ command, args });
  }

  usage = () => this.call<Usage>('usage');
  kinds = () => this.call<Kind[]>('kinds');

  stop(): Promise<void> {
    return this.rpc.stop({ command: 'stop', args: {} }, 30_000);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line: string) => process.stderr.write(`${line}\n`);

async function xactCommit(database: string): Promise<number> {
  return withClient(SERVER_URL, async (c) => {
    await c.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await c.query(`SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, [
      database,
    ]);
    return Number(rows[0]?.xact_commit ?? 0);
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// --- 1. Burst ---------------------------------------------------------------

interface BurstFigure {
  limit: BurstName;
  label: string;
  count: number;
  capped: boolean;
  effected: number;
  missing: number;
  duplicates: number;
  /** Last effect − due time. */
  drainMs: number | null;
  /** Between the first and the last effect. */
  effectsPerSecond: number | null;
  latenessP50Ms: number | null;
  latenessP99Ms: number | null;
  /** The instance's process, from scheduling to the last effect, per task. */
  processCpuUsPerTask: number;
  /** The bench database's backends over the same span (null: Postgres not on this host). */
  backendCpuUsPerTask: number | null;
  statementsPerTask: number;
  /** pg_stat_database.xact_commit, read after the instance stopped (its start-up and shutdown included). */
  transactionsPerTask: number;
  /** The statements it sent most, per task. */
  topStatements: Array<{ statement: string; perTask: number }>;
  /** Effects/s over the first and the second half of the effects: does the rate hold through the burst? */
  halvesPerSecond: [number, number] | null;
  /**
   * The rate limit's ledger after the burst (the server runs with autovacuum
   * off here): its size, rows, and updates, of which HOT, and dead tuples.
   */
  creditTable?: {
    bytes: number;
    rows: number;
    updates: number;
    hotUpdates: number;
    deadTuples: number;
  };
}

async function halves(client: pg.Client): Promise<[number, number] | null> {
  const { rows } = await client.query(
    `SELECT count(*)::int AS n, extract(epoch FROM min(effected_at)) * 1000 AS t0,
            extract(epoch FROM percentile_disc(0.5) WITHIN GROUP (ORDER BY effected_at)) * 1000 AS tm,
            extract(epoch FROM max(effected_at)) * 1000 AS t1
     FROM bench_order WHERE effects > 0`,
  );
  const { n, t0, tm, t1 } = rows[0];
  if (!n || Number(tm) <= Number(t0) || Number(t1) <= Number(tm)) return null;
  return [
    round((n / 2 / (Number(tm) - Number(t0))) * 1000),
    round((n / 2 / (Number(t1) - Number(tm))) * 1000),
  ];
}

async function creditTable(client: pg.Client): Promise<BurstFigure['creditTable']> {
  const { rows } = await client.query(
    `SELECT pg_total_relation_size('delay_limit_credit') AS bytes,
            (SELECT count(*) FROM delay_limit_credit) AS rows,
            n_tup_upd, n_tup_hot_upd, n_dead_tup
     FROM pg_stat_user_tables WHERE relname = 'delay_limit_credit'`,
  );
  const r = rows[0];
  return {
    bytes: Number(r.bytes),
    rows: Number(r.rows),
    updates: Number(r.n_tup_upd),
    hotUpdates: Number(r.n_tup_hot_upd),
    deadTuples: Number(r.n_dead_tup),
  };
}

async function runBurst(
  limit: BurstName,
  count: number,
  capMs: number,
  backends: boolean,
): Promise<BurstFigure> {
  const database = `bench_limits_${limit.toLowerCase()}`;
  const url = await freshDatabase(database);
  try {
    const instance = await Instance.launch(url, limit);
    try {
      return await withClient(url, async (client) => {
        const myPid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
        const leadMs = 1_500 + count / 50 + (count / 15_000) * 1_500;
        const firstDueMs = Math.ceil((Date.now() + leadMs) / 1000) * 1000;
        await seedOrders(client, { count, firstDueMs, stepMs: 0 });
        const x0 = await xactCommit(database);
        const u0 = await instance.usage();
        await instance.kinds();
        const cpu = backends ? new BackendCpu(database, [myPid]) : undefined;
        await cpu?.start();
        const scheduled = await instance.call<{ ms: number; endedAtMs: number }>('schedule', {
          type: EFFECT_TYPE,
          from: 1,
          count,
          dueMs: firstDueMs,
        });
        if (scheduled.endedAtMs > firstDueMs)
          log(`  (scheduling ended ${scheduled.endedAtMs - firstDueMs} ms after the due time)`);
        let polls = 0;
        let effected: number;
        const deadline = firstDueMs + capMs;
        let lastLog = 0;
        for (;;) {
          polls++;
          effected = Number(
            (await client.query(`SELECT count(*) AS n FROM bench_order WHERE effects > 0`)).rows[0]
              .n,
          );
          if (effected >= count || Date.now() > deadline) break;
          if (Date.now() - lastLog > 10_000) {
            lastLog = Date.now();
            log(
              `  ${BURSTS[limit].label}: ${effected.toLocaleString('en-US')}/${count.toLocaleString('en-US')}`,
            );
          }
          await sleep(250);
        }
        const u1 = await instance.usage();
        const backendMs = cpu ? await cpu.stop() : null;
        const top = await instance.kinds();
        await instance.stop();
        const outcome = await readOutcome(client, count);
        const split = await halves(client);
        // The instance's backends flushed their statistics as they exited.
        const credits = limit === 'rate' ? await creditTable(client) : undefined;
        // This connection's polls and its reads since are not the instance's.
        const x1 = (await xactCommit(database)) - polls - (credits ? 3 : 2);
        const span =
          outcome.firstEffectMs !== null && outcome.lastEffectMs !== null
            ? outcome.lastEffectMs - outcome.firstEffectMs
            : null;
        return {
          limit,
          label: BURSTS[limit].label,
          count,
          capped: effected < count,
          effected: outcome.effected,
          missing: outcome.missing,
          duplicates: outcome.duplicates,
          drainMs: outcome.lastEffectMs === null ? null : round(outcome.lastEffectMs - firstDueMs),
          effectsPerSecond: span ? round((outcome.effected / span) * 1000) : null,
          latenessP50Ms: outcome.lateness?.p50 ?? null,
          latenessP99Ms: outcome.lateness?.p99 ?? null,
          processCpuUsPerTask: round(((u1.cpuMs - u0.cpuMs) * 1000) / count, 1),
          backendCpuUsPerTask: backendMs === null ? null : round((backendMs * 1000) / count, 1),
          statementsPerTask: round((u1.statements - u0.statements) / count, 2),
          transactionsPerTask: round((x1 - x0) / count, 2),
          topStatements: top
            .slice(0, 8)
            .map((k) => ({ statement: k.statement, perTask: round(k.count / count, 3) })),
          halvesPerSecond: split,
          ...(credits ? { creditTable: credits } : {}),
        };
      });
    } finally {
      await instance.stop();
    }
  } finally {
    await dropDatabase(database);
  }
}

// --- 2. Idle while tasks wait -----------------------------------------------

type IdleScene = 'nothing' | 'limit' | 'paused';
const SCENES: Record<IdleScene, string> = {
  nothing: 'nothing waiting',
  limit: 'behind a full concurrency limit of 1',
  paused: 'behind a paused type',
};

interface IdleFigure {
  scene: IdleScene;
  label: string;
  instances: number;
  waiting: number;
  /** Of those, waiting in the instances' gates when the window began (the rest taken by the claim holding the slot). */
  inGates: number;
  seconds: number;
  statementsPerSecond: number;
  xactCommitPerSecond: number;
  /** All instances' processes together. */
  processCpuMsPerSecond: number;
  /** Each instance's process. */
  processCpuMsPerSecondEach: number[];
  backendCpuMsPerSecond: number | null;
  /** Statements per second by kind (first 100 characters), all instances. */
  byKind: Array<{ statement: string; perSecond: number }>;
  /** The limit held throughout: one handler of the type started, and it still held the slot at the end. */
  held?: { started: number; holding: number };
}

async function waitFor(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

async function runIdle(
  scene: IdleScene,
  instances: number,
  waiting: number,
  seconds: number,
  backends: boolean,
): Promise<IdleFigure> {
  const database = 'bench_limits_idle';
  const url = await freshDatabase(database);
  const apps: Instance[] = [];
  try {
    // One after the other: the first runs the migrations.
    for (let i = 0; i < instances; i++) apps.push(await Instance.launch(url, 'idle'));
    const type = scene === 'paused' ? PAUSED_TYPE : HOLD_TYPE;
    let inGatesAtStart = 0;
    if (scene === 'paused') await apps[0].call('pause', { type });
    if (scene !== 'nothing') {
      // Each instance schedules (and so holds) its share, due now.
      const share = Math.ceil(waiting / instances);
      await Promise.all(
        apps.map((app, i) =>
          app.call('schedule', {
            type,
            from: i * share + 1,
            count: Math.min(share, waiting - i * share),
          }),
        ),
      );
      // Every task still pending, the gates settled (the same count twice,
      // 500 ms apart) and, with a limit, the slot held. A gate holds at most
      // its capacity (LimitGate): the rest wait in the table, read back as
      // it empties, so the count in the gates is reported, not required.
      let last = -1;
      await waitFor(`${waiting} tasks waiting and the gates settled`, 120_000, async () => {
        const states = await Promise.all(
          apps.map((app) =>
            app.call<{ waiting: number; waitingHere: number; holding: number }>('waiting', {
              type,
            }),
          ),
        );
        const inGates = states.reduce((n, s) => n + s.waitingHere, 0);
        const holding = states.reduce((n, s) => n + s.holding, 0);
        const settled = inGates === last;
        last = inGates;
        inGatesAtStart = inGates;
        return (
          settled &&
          inGates > 0 &&
          states[0].waiting === waiting &&
          (scene === 'paused' || holding === 1)
        );
      });
    }
    // Past the busy lines' backoff (10 ms doubling to 1 s), and long enough
    // for every backend to have flushed its statistics of the scheduling
    // (an idle backend does within 10 s): xact_commit counts the window only.
    await sleep(11_000);
    const label = `${SCENES[scene]}, ${instances} instance${instances > 1 ? 's' : ''}`;
    await Promise.all(apps.map((app) => app.call('gc')));
    const x0 = await xactCommit(database);
    const u0 = await Promise.all(apps.map((app) => app.usage()));
    await Promise.all(apps.map((app) => app.kinds()));
    const cpu = backends ? new BackendCpu(database, []) : undefined;
    await cpu?.start();
    const startedAt = performance.now();
    log(`  ${label}: ${seconds} s`);
    await sleep(seconds * 1000);
    const u1 = await Promise.all(apps.map((app) => app.usage()));
    const elapsed = (performance.now() - startedAt) / 1000;
    const backendMs = cpu ? await cpu.stop() : null;
    const kinds = new Map<string, number>();
    for (const list of await Promise.all(apps.map((app) => app.kinds())))
      for (const k of list) kinds.set(k.statement, (kinds.get(k.statement) ?? 0) + k.count);
    const x1 = await xactCommit(database);
    let held: IdleFigure['held'];
    if (scene === 'limit') {
      const states = await Promise.all(
        apps.map((app) => app.call<{ holding: number; started: number }>('waiting', { type })),
      );
      held = {
        started: states.reduce((n, s) => n + s.started, 0),
        holding: states.reduce((n, s) => n + s.holding, 0),
      };
    }
    const sum = (us: Usage[], f: (u: Usage) => number) => us.reduce((n, u) => n + f(u), 0);
    const figure: IdleFigure = {
      scene,
      label,
      instances,
      waiting: scene === 'nothing' ? 0 : waiting,
      inGates: inGatesAtStart,
      seconds: round(elapsed, 1),
      statementsPerSecond: round(
        (sum(u1, (u) => u.statements) - sum(u0, (u) => u.statements)) / elapsed,
        2,
      ),
      xactCommitPerSecond: round((x1 - x0) / elapsed, 2),
      processCpuMsPerSecond: round(
        (sum(u1, (u) => u.cpuMs) - sum(u0, (u) => u.cpuMs)) / elapsed,
        2,
      ),
      processCpuMsPerSecondEach: u1.map((u, i) => round((u.cpuMs - u0[i].cpuMs) / elapsed, 2)),
      backendCpuMsPerSecond: backendMs === null ? null : round(backendMs / elapsed, 2),
      byKind: [...kinds.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([statement, count]) => ({ statement, perSecond: round(count / elapsed, 2) })),
      ...(held ? { held } : {}),
    };
    log(
      `  ${label}: ${figure.statementsPerSecond} statements/s, ${figure.xactCommitPerSecond} xact_commit/s, ` +
        `${figure.processCpuMsPerSecond} CPU ms/s (instances), ${figure.backendCpuMsPerSecond ?? '—'} CPU ms/s (backends)`,
    );
    return figure;
  } finally {
    await Promise.all(apps.map((app) => app.call('release').catch(() => undefined)));
    await Promise.all(apps.map((app) => app.stop()));
    await dropDatabase(database);
  }
}

// --- Tables -------------------------------------------------------------------

const fmt = (v: number | null, digits = 0) =>
  v === null
    ? '—'
    : v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function table(head: string[], rows: string[][]): string {
  return [
    `| ${head.join(' | ')} |`,
    `| ${head.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

interface BurstSummary {
  limit: BurstName;
  label: string;
  effectsPerSecond: number;
  effectsRatio: number;
  processCpuUsPerTask: number;
  processCpuRatio: number;
  backendCpuUsPerTask: number | null;
  backendCpuRatio: number | null;
  totalCpuRatio: number | null;
  statementsPerTask: number;
  transactionsPerTask: number;
  drainMs: number | null;
  missing: number;
  duplicates: number;
}

/** One round: every limit once, and no limit again at the end (its drift is the round's noise). */
interface BurstRound {
  figures: Record<BurstName, BurstFigure>;
  noneAgain: BurstFigure;
}

function summarize(rounds: BurstRound[]): BurstSummary[] {
  const mean = (a: number | null, b: number | null) =>
    a === null || b === null ? null : (a + b) / 2;
  const total = (f: BurstFigure) =>
    f.backendCpuUsPerTask === null ? null : f.processCpuUsPerTask + f.backendCpuUsPerTask;
  return BURST_NAMES.map((limit) => {
    const med = (f: (r: BurstRound) => number | null) => {
      const values = rounds.map(f).filter((v): v is number => v !== null && Number.isFinite(v));
      return values.length ? median(values) : null;
    };
    /** This limit's figure in a round (no limit: the mean of its two runs). */
    const of = (r: BurstRound, f: (x: BurstFigure) => number | null) =>
      limit === 'none' ? mean(f(r.figures.none), f(r.noneAgain)) : f(r.figures[limit]);
    const base = (r: BurstRound, f: (x: BurstFigure) => number | null) =>
      mean(f(r.figures.none), f(r.noneAgain));
    const ratioOf = (f: (x: BurstFigure) => number | null) =>
      med((r) => {
        const a = of(r, f);
        const b = base(r, f);
        return a === null || b === null || b === 0 ? null : a / b;
      });
    const figures = rounds.flatMap((r) =>
      limit === 'none' ? [r.figures.none, r.noneAgain] : [r.figures[limit]],
    );
    return {
      limit,
      label: BURSTS[limit].label,
      effectsPerSecond: med((r) => of(r, (x) => x.effectsPerSecond))!,
      effectsRatio: ratioOf((x) => x.effectsPerSecond)!,
      processCpuUsPerTask: med((r) => of(r, (x) => x.processCpuUsPerTask))!,
      processCpuRatio: ratioOf((x) => x.processCpuUsPerTask)!,
      backendCpuUsPerTask: med((r) => of(r, (x) => x.backendCpuUsPerTask)),
      backendCpuRatio: ratioOf((x) => x.backendCpuUsPerTask),
      totalCpuRatio: ratioOf(total),
      statementsPerTask: med((r) => of(r, (x) => x.statementsPerTask))!,
      transactionsPerTask: med((r) => of(r, (x) => x.transactionsPerTask))!,
      drainMs: med((r) => of(r, (x) => x.drainMs)),
      missing: figures.reduce((n, f) => n + f.missing, 0),
      duplicates: figures.reduce((n, f) => n + f.duplicates, 0),
    };
  });
}

function burstTable(summary: BurstSummary[]): string {
  return table(
    [
      'limit',
      'effects/s',
      '× none',
      'drain s',
      'process CPU µs/task',
      '× none',
      'backend CPU µs/task',
      '× none',
      'CPU both × none',
      'statements/task',
      'transactions/task',
      'missing, duplicates',
    ],
    summary.map((s) => [
      s.label,
      fmt(s.effectsPerSecond),
      `${s.effectsRatio.toFixed(2)}×`,
      s.drainMs === null ? '—' : fmt(s.drainMs / 1000, 1),
      fmt(s.processCpuUsPerTask),
      `${s.processCpuRatio.toFixed(2)}×`,
      fmt(s.backendCpuUsPerTask),
      s.backendCpuRatio === null ? '—' : `${s.backendCpuRatio.toFixed(2)}×`,
      s.totalCpuRatio === null ? '—' : `${s.totalCpuRatio.toFixed(2)}×`,
      fmt(s.statementsPerTask, 2),
      fmt(s.transactionsPerTask, 2),
      `${s.missing}, ${s.duplicates}`,
    ]),
  );
}

function idleTable(figures: IdleFigure[]): string {
  const baseline = (f: IdleFigure) =>
    figures.find((b) => b.scene === 'nothing' && b.instances === f.instances);
  return table(
    [
      'waiting',
      'instances',
      'statements/s',
      '− nothing waiting',
      'xact_commit/s',
      'instances CPU ms/s',
      'backends CPU ms/s',
      'the gate’s statements/s (limits read, slot look)',
    ],
    figures.map((f) => {
      const base = baseline(f);
      const gate = f.byKind
        .filter((k) => /^SELECT type, paused_at, overridden|^SELECT i, EXISTS/.test(k.statement))
        .reduce((n, k) => n + k.perSecond, 0);
      return [
        SCENES[f.scene] + (f.waiting ? ` (${fmt(f.waiting)})` : ''),
        String(f.instances),
        fmt(f.statementsPerSecond, 2),
        base && base !== f
          ? `${f.statementsPerSecond - base.statementsPerSecond >= 0 ? '+' : ''}${fmt(f.statementsPerSecond - base.statementsPerSecond, 2)}`
          : '—',
        fmt(f.xactCommitPerSecond, 2),
        fmt(f.processCpuMsPerSecond, 1),
        fmt(f.backendCpuMsPerSecond, 1),
        fmt(gate, 2),
      ];
    }),
  );
}

// --- Main ---------------------------------------------------------------------

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const option = (name: string): string | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const positional = args.filter(
    (arg, i) =>
      !arg.startsWith('--') &&
      !['--window', '--waiting', '--rate-starts', '--only'].includes(args[i - 1]),
  );
  const count = Number(positional[0] ?? (quick ? 3_000 : 20_000));
  const rounds = Number(positional[1] ?? 1);
  const seconds = Number(option('--window') ?? (quick ? 10 : 30));
  const waiting = Number(option('--waiting') ?? (quick ? 2_000 : 10_000));
  const capMs = quick ? 90_000 : 240_000;
  const only = option('--only');
  if (only !== undefined && only !== 'burst' && only !== 'idle')
    throw new Error(`--only takes burst or idle; got ${only}`);
  const backends = await BackendCpu.available();
  const startedAt = new Date();
  const loadBefore = os.loadavg();
  log(
    `bench:limits: burst ${count.toLocaleString('en-US')} tasks × ${BURST_NAMES.length} limits × ${rounds} round(s); ` +
      `idle ${seconds} s with ${waiting.toLocaleString('en-US')} waiting; backend CPU ${backends ? 'from /proc' : 'not measured (Postgres is not on this host)'}` +
      (quick ? ' (--quick: a smoke test, not figures)' : ''),
  );

  const burstRounds: BurstRound[] = [];
  const report = (r: number, f: BurstFigure) =>
    log(
      `round ${r + 1}, ${f.label}: ${f.effectsPerSecond}/s, drain ${f.drainMs} ms, ` +
        `${f.processCpuUsPerTask} µs process + ${f.backendCpuUsPerTask ?? '—'} µs backend CPU/task, ` +
        `${f.statementsPerTask} statements/task, ${f.transactionsPerTask} transactions/task; ` +
        `missing ${f.missing}, duplicates ${f.duplicates}${f.capped ? ', CAPPED' : ''}`,
    );
  const limited = BURST_NAMES.filter((name) => name !== 'none');
  for (let r = 0; r < (only === 'idle' ? 0 : rounds); r++) {
    const figures = {} as Record<BurstName, BurstFigure>;
    figures.none = await runBurst('none', count, capMs, backends);
    report(r, figures.none);
    // No limit first and last; the limited ones between, in turn reversed each round.
    for (const limit of r % 2 === 0 ? limited : [...limited].reverse()) {
      figures[limit] = await runBurst(limit, count, capMs, backends);
      report(r, figures[limit]);
    }
    const noneAgain = await runBurst('none', count, capMs, backends);
    report(r, noneAgain);
    burstRounds.push({ figures, noneAgain });
  }
  const summary = summarize(burstRounds);

  const idle: IdleFigure[] = [];
  for (const instances of only === 'burst' ? [] : [1, 3])
    for (const scene of ['nothing', 'limit', 'paused'] as IdleScene[])
      idle.push(await runIdle(scene, instances, waiting, seconds, backends));

  const pgVersion = await withClient(
    SERVER_URL,
    async (c) => (await c.query('SHOW server_version')).rows[0].server_version as string,
  );
  const result = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    quick,
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      loadavgBefore: loadBefore.map((l) => round(l, 2)),
      loadavgAfter: os.loadavg().map((l) => round(l, 2)),
      node: process.version,
      postgres: pgVersion,
    },
    settings: {
      count,
      rounds,
      idleSeconds: seconds,
      waiting,
      poolSize: POOL_SIZE,
      concurrency: CONCURRENCY,
      statementSource: 'pg driver',
      backendCpu: backends ? '/proc/<pid>/stat of the bench database backends' : null,
    },
    burst: { rounds: burstRounds, summary },
    idle,
  };
  const dir = fileURLToPath(new URL('../../../bench/results/', import.meta.url));
  await mkdir(dir, { recursive: true });
  const file = `${dir}limits-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`;
  await writeFile(file, `${JSON.stringify(result, null, 2)}\n`);

  const load = `load average ${loadBefore.map((l) => l.toFixed(1)).join(' ')} at the start, ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} at the end, ${os.cpus().length} cores`;
  const parts: string[] = [];
  if (burstRounds.length > 0)
    parts.push(
      `## Burst: ${count.toLocaleString('en-US')} tasks due at one instant (medians of ${rounds} round(s); ratios to "no limit" within each round)\n\n` +
        burstTable(summary) +
        `\n\nNo limit ran first and last in each round (its figures are the mean of both); ` +
        `the last over the first: ${burstRounds
          .map((r) =>
            ((r.noneAgain.effectsPerSecond ?? 0) / (r.figures.none.effectsPerSecond ?? 1)).toFixed(
              2,
            ),
          )
          .join(', ')}× effects/s (the noise between identical runs). ` +
        `Effects/s in the first and the second half of each burst: ${burstRounds
          .flatMap((r) =>
            BURST_NAMES.map((name) => {
              const h = r.figures[name].halvesPerSecond;
              return `${name} ${h ? h.map((v) => fmt(v)).join(' / ') : '—'}`;
            }),
          )
          .join('; ')}.` +
        burstRounds
          .map((r) => r.figures.rate.creditTable)
          .filter((c) => c !== undefined)
          .map(
            (c) =>
              ` Rate ledger after the burst: ${fmt(c.rows)} credits, ${fmt(c.bytes / 1024)} KiB, ` +
              `${fmt(c.updates)} updates (${fmt(c.hotUpdates)} HOT), ${fmt(c.deadTuples)} dead tuples.`,
          )
          .join(''),
    );
  if (idle.length > 0)
    parts.push(
      `## Idle: ${waiting.toLocaleString('en-US')} tasks waiting, ${seconds} s measured\n\n` +
        idleTable(idle),
    );
  parts.push(`${load}; statements counted at the pg driver in the instances; ${file}`);
  console.log(parts.join('\n\n'));
  for (const f of idle) {
    console.log(`\n${f.label}: statements/s by kind`);
    for (const k of f.byKind.slice(0, 8))
      console.log(`  ${k.perSecond.toFixed(2).padStart(7)}  ${k.statement}`);
    console.log(`  (CPU ms/s of each instance: ${f.processCpuMsPerSecondEach.join(', ')})`);
    if (f.held)
      console.log(
        `  (hold handlers started ${f.held.started}, holding at the end ${f.held.holding})`,
      );
  }
}

if (IS_CHILD) childMain();
else
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
