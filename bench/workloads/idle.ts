/**
 * `idle`: 50,000 tasks due in an hour, then 30 s measured while nothing is
 * due: statements the system sent to Postgres, CPU seconds and RSS of its
 * process (each system runs in a child process of its own). This project runs
 * at its 1 s and at a 100 ms tick; the Nest + TypeORM app without DelayModule
 * runs too, as the floor under this project's RSS.
 *
 * Statements come from pg_stat_statements when the server has it loaded,
 * otherwise from a counter wrapped around `pg`'s Client#query in the child
 * (every system here talks to Postgres through `pg`). pg_stat_database's
 * xact_commit delta is reported alongside; for BullMQ, Redis commands
 * (INFO total_commands_processed).
 */
import { Redis } from 'ioredis';
import type pg from 'pg';
import { SystemProcess } from '../harness/child.js';
import {
  REDIS_URL,
  SERVER_URL,
  dropDatabase,
  freshDatabase,
  round,
  withClient,
} from '../harness/db.js';
import { mib, num, table } from '../harness/format.js';
import { log, sleep, sleepWithBar } from '../harness/progress.js';
import type { RunContext, Workload } from '../harness/workload.js';
import { label, PEERS, type SystemName } from '../systems/system.js';

export interface IdleFigure {
  system: SystemName;
  tickMs?: number;
  label: string;
  pending: number;
  seconds: number;
  statementSource: 'pg_stat_statements' | 'pg driver';
  statementsPerSecond: number;
  xactCommitPerSecond: number;
  redisCommandsPerSecond: number | null;
  cpuSeconds: number;
  /** After full GCs and V8's low-memory GC (young generation shrunk). */
  rssBytes: number;
  /** After the full GCs alone: the young generation as the last allocation burst left it. */
  rssAfterFullGcBytes?: number;
}

export async function statementsViaExtension(url: string): Promise<number | null> {
  try {
    return await withClient(url, async (c) => {
      await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      const { rows } = await c.query(
        `SELECT coalesce(sum(calls), 0)::bigint AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      return Number(rows[0].n);
    });
  } catch {
    return null; // not in shared_preload_libraries: count at the driver instead
  }
}

export async function xactCommit(server: pg.Client, database: string): Promise<number> {
  await server.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await server.query(
    `SELECT xact_commit FROM pg_stat_database WHERE datname = $1`,
    [database],
  );
  return Number(rows[0]?.xact_commit ?? 0);
}

async function redisCommands(redis: Redis): Promise<number> {
  return Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))?.[1] ?? 0);
}

async function measure(
  { system, tickMs }: { system: SystemName; tickMs?: number },
  pending: number,
  seconds: number,
  database: string,
): Promise<IdleFigure> {
  const url = await freshDatabase(database);
  const { sut } = await SystemProcess.launch(system, url, { tickMs });
  const redis = new Redis(REDIS_URL);
  try {
    return await withClient(SERVER_URL, async (server) => {
      await sut.schedule({ count: pending, firstDueMs: Date.now() + 3_600_000, stepMs: 0 }, 'bulk');
      await sleep(3_000); // let the scheduling settle: measure the steady state
      const extension0 = await statementsViaExtension(url);
      const [u0, x0, r0] = [
        await sut.usage(),
        await xactCommit(server, database),
        await redisCommands(redis),
      ];
      await sleepWithBar(`${label(system, tickMs)} idle`, seconds * 1000);
      const [u1, x1, r1] = [
        await sut.usage(),
        await xactCommit(server, database),
        await redisCommands(redis),
      ];
      const extension1 = extension0 === null ? null : await statementsViaExtension(url);
      const settled = await sut.settledUsage();
      const viaExtension = extension0 !== null && extension1 !== null;
      const statements = viaExtension ? extension1 - extension0 - 2 : u1.statements - u0.statements;
      const figure: IdleFigure = {
        system,
        tickMs,
        label: label(system, tickMs),
        pending,
        seconds,
        statementSource: viaExtension ? 'pg_stat_statements' : 'pg driver',
        statementsPerSecond: round(statements / seconds, 2),
        xactCommitPerSecond: round((x1 - x0) / seconds, 2),
        redisCommandsPerSecond: system === 'bullmq' ? round((r1 - r0 - 1) / seconds, 2) : null,
        cpuSeconds: round((u1.cpuMs - u0.cpuMs) / 1000, 3),
        rssBytes: settled.rss,
        rssAfterFullGcBytes: settled.rssAfterFullGc,
      };
      log(
        `  ${figure.label}: ${num(figure.statementsPerSecond)} statements/s, ${figure.cpuSeconds} CPU s`,
      );
      return figure;
    });
  } finally {
    redis.disconnect();
    await sut.stop();
    await dropDatabase(database);
  }
}

export const idle: Workload<{ figures: IdleFigure[] }> = {
  name: 'idle',
  title: 'Idle: 50,000 tasks due in an hour, 30 s measured',
  async run(ctx: RunContext) {
    const figures: IdleFigure[] = [];
    const variants: Array<{ system: SystemName; tickMs?: number }> = [
      { system: 'project', tickMs: 1000 },
      { system: 'project', tickMs: 100 },
      ...PEERS.map((system) => ({ system })),
      { system: 'nest-floor' },
    ];
    for (const variant of variants) {
      figures.push(
        await measure(
          variant,
          ctx.size(50_000, 5_000),
          ctx.size(30, 5),
          ctx.database(`idle_${variant.system.replace('-', '_')}`),
        ),
      );
    }
    return { figures };
  },
  markdown({ figures }) {
    const source = figures[0]?.statementSource ?? 'pg driver';
    return (
      table(
        [
          'system',
          'statements/s',
          'xact_commit/s',
          'Redis commands/s',
          `CPU s in ${figures[0]?.seconds ?? 30} s`,
          'RSS at rest',
          'RSS after full GC',
        ],
        figures.map((f) => [
          f.label,
          f.statementsPerSecond,
          f.xactCommitPerSecond,
          f.redisCommandsPerSecond,
          f.cpuSeconds,
          mib(f.rssBytes),
          f.rssAfterFullGcBytes === undefined ? '—' : mib(f.rssAfterFullGcBytes),
        ]),
      ) +
      `\n\nStatements counted by: ${source}. xact_commit from pg_stat_database (flushed by the server with up to ~1 s delay). ` +
      `RSS at rest: after full GCs and V8's low-memory GC, which also shrinks the young generation; ` +
      `after full GCs alone it keeps whatever size the last allocation burst grew it to (up to 32 MiB), which varies from run to run.`
    );
  },
};
