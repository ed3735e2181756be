import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import pg from 'pg';
import {
  DelayModule,
  DelayService,
  DelayedTaskHandler,
  RecurringTask,
  type TaskContext,
} from 'nest-delay';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { findServerBinaries } from '../support/private-postgres.js';
import {
  startReplicatedPostgres,
  type ReplicatedPostgres,
} from '../support/replicated-postgres.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { CapturingLogger } from './delay-test-app.js';

// A failover under load: two instances on the real clock reach the database
// through one endpoint (a TCP proxy, as a DNS name or a writer endpoint is);
// mid-run the primary dies (immediate stop), the streaming standby is
// promoted and the endpoint moved to it. The instances are not restarted.
//
// What "committed" means across the failover: replication is synchronous
// (synchronous_standby_names = '*'), so a schedule() that returned was
// flushed by the standby before its COMMIT was acknowledged, and must run
// exactly once on the new primary. A schedule() that failed while the
// primary died may or may not have committed: such a task runs once if the
// new primary has it, and not at all otherwise. A claim that committed on
// the old primary without the standby's acknowledgement is lost with the
// old timeline, its effect with it (both are in the claim's transaction),
// and runs again on the new one: still one effect where it counts.

const serverless = (() => {
  const { bin, missing } = findServerBinaries();
  if (!bin) return missing;
  if (!existsSync(join(bin, 'pg_basebackup'))) return `no pg_basebackup in ${bin}`;
  return undefined;
})();
const describeWithReplication: jest.Describe = serverless
  ? (((name: string, fn: () => void) =>
      describe.skip(`${name} (skipped: ${serverless})`, fn)) as unknown as jest.Describe)
  : describe;

const EFFECT = 'failover.effect';
const TICK = 'failover.tick';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

@Injectable()
class FailoverHandlers {
  /** One effect row per run, in the claim's transaction, with the app's clock beside the due time. */
  @DelayedTaskHandler(EFFECT)
  async effect(_payload: unknown, { task, manager, instanceId }: TaskContext) {
    await manager.query(
      `INSERT INTO failover_effect (task_id, instance, due_at, ran_at) VALUES ($1, $2, $3, $4)`,
      [task.id, instanceId, task.dueAt, new Date()],
    );
  }

  @RecurringTask(TICK, { every: '1s' })
  async tick(_payload: unknown, { task, manager, instanceId }: TaskContext) {
    await manager.query(
      `INSERT INTO failover_tick (due_at, instance, ran_at) VALUES ($1, $2, $3)`,
      [task.dueAt, instanceId, new Date()],
    );
  }
}

@Module({ providers: [FailoverHandlers] })
class FailoverHandlersModule {}

interface Instance {
  moduleRef: TestingModule;
  delay: DelayService;
}

/** Nest's static loggers write to the logger set last: one for both instances. */
const logger = new CapturingLogger();

/** An instance of its own DataSource (named, so the two do not share one registration). */
async function bootInstance(url: string, instanceId: string): Promise<Instance> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({
        ...dataSourceOptions({ url, poolSize: 6, migrationsRun: true }),
        name: instanceId,
        logging: false,
        retryAttempts: 0,
      }),
      DelayModule.forRoot({
        instanceId,
        dataSource: instanceId,
        tickMs: 100,
        lease: '3s',
        retry: { baseDelay: '200ms' },
      }),
      FailoverHandlersModule,
    ],
  })
    .setLogger(logger)
    .compile();
  await moduleRef.init();
  return { moduleRef, delay: moduleRef.get(DelayService) };
}

describeWithReplication('a failover to a synchronous standby while tasks fire', () => {
  let servers: ReplicatedPostgres;
  let proxy: TcpProxy;
  const instances: Instance[] = [];

  /** A statement on the server that is primary now, straight to it, not through the endpoint. */
  const onPrimary = async <T>(port: number, text: string, params: unknown[] = []) => {
    const client = new pg.Client({
      connectionString: `postgres://postgres@127.0.0.1:${port}/failover`,
    });
    await client.connect();
    try {
      return (await client.query(text, params)).rows as T[];
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    servers = await startReplicatedPostgres();
    const admin = new pg.Client({
      connectionString: `postgres://postgres@127.0.0.1:${servers.primaryPort}/postgres`,
    });
    await admin.connect();
    await admin.query('CREATE DATABASE failover');
    await admin.end();
    await onPrimary(
      servers.primaryPort,
      `CREATE TABLE failover_effect (task_id bigint NOT NULL, instance text NOT NULL,
         due_at timestamptz NOT NULL, ran_at timestamptz NOT NULL);
       CREATE TABLE failover_tick (due_at timestamptz NOT NULL, instance text NOT NULL,
         ran_at timestamptz NOT NULL)`,
    );
    proxy = await startTcpProxy(servers.primaryPort);
  }, 120_000);

  afterAll(async () => {
    for (const instance of instances) await instance.moduleRef.close().catch(() => undefined);
    await proxy?.close();
    servers?.destroy();
  }, 60_000);

  it('runs every acknowledged task once, none early, and goes on without a restart', async () => {
    const url = `postgres://postgres@127.0.0.1:${proxy.port}/failover`;
    instances.push(await bootInstance(url, 'failover-a'), await bootInstance(url, 'failover-b'));

    // Tasks due 0.2 to 3 s out, scheduled through both instances every 20 ms,
    // so that some fall due while there is no primary at all.
    const acknowledged: Array<{ id: string; dueAt: Date; beforeCrash: boolean }> = [];
    let unanswered = 0;
    let crashed = false;
    let producing = true;
    const producer = (async () => {
      for (let i = 0; producing; i++) {
        const delay = 200 + ((i * 373) % 2800);
        try {
          const task = await instances[i % 2].delay.schedule({ type: EFFECT, delay });
          acknowledged.push({ id: task.id, dueAt: task.dueAt, beforeCrash: !crashed });
        } catch {
          unanswered++;
        }
        await sleep(20);
      }
    })();

    await sleep(4000);
    // Set before the stop begins: an acknowledgement after this may have come
    // from the dying primary, and it counts as after the crash.
    crashed = true;
    const crashAt = Date.now();
    await servers.crashPrimary();
    // The endpoint still names the dead primary for a second: connections are refused.
    await sleep(1000);
    await servers.promoteStandby();
    proxy.repoint(servers.standbyPort);
    const promotedAt = Date.now();
    await sleep(4000);
    producing = false;
    await producer;

    const primary = servers.standbyPort;
    const ids = acknowledged.map((task) => task.id);
    await eventually(async () => {
      const [row] = await onPrimary<{ pending: number }>(
        primary,
        `SELECT count(*)::int AS pending FROM delayed_task
         WHERE type = $1 AND executed_at IS NULL AND dead_at IS NULL`,
        [EFFECT],
      );
      return row.pending === 0;
    }, 60_000);
    // Schedules fire on the new primary: occurrences due a few seconds after the promotion.
    await eventually(async () => {
      const [row] = await onPrimary<{ n: number }>(
        primary,
        `SELECT count(*)::int AS n FROM failover_tick WHERE due_at > $1`,
        [new Date(promotedAt + 2000)],
      );
      return row.n >= 2;
    }, 30_000);

    const twice = await onPrimary(
      primary,
      `SELECT task_id, count(*)::int AS runs FROM failover_effect GROUP BY task_id HAVING count(*) > 1`,
    );
    expect(twice).toEqual([]);
    const missing = await onPrimary(
      primary,
      `SELECT id FROM unnest($1::bigint[]) AS id
       WHERE NOT EXISTS (SELECT 1 FROM failover_effect e WHERE e.task_id = id)`,
      [ids],
    );
    expect(missing).toEqual([]);
    // A task the new primary has, acknowledged or not, ran once and only as itself.
    const unexplained = await onPrimary(
      primary,
      `SELECT t.id, t.executed_at, t.dead_at, t.last_error FROM delayed_task t
       WHERE t.type = $1 AND (t.executed_at IS NULL
         OR (SELECT count(*) FROM failover_effect e WHERE e.task_id = t.id) <> 1)`,
      [EFFECT],
    );
    expect(unexplained).toEqual([]);
    const early = await onPrimary(
      primary,
      `SELECT task_id, due_at, ran_at FROM failover_effect WHERE ran_at < due_at
       UNION ALL SELECT NULL, due_at, ran_at FROM failover_tick WHERE ran_at < due_at`,
    );
    expect(early).toEqual([]);
    const ticksTwice = await onPrimary(
      primary,
      `SELECT due_at, count(*)::int AS runs FROM failover_tick GROUP BY due_at HAVING count(*) > 1`,
    );
    expect(ticksTwice).toEqual([]);

    // No deadlock on either server (each logs one it detects).
    const { primary: primaryLog, standby: standbyLog } = servers.logs();
    expect(primaryLog + standbyLog).not.toMatch(/deadlock detected/);

    const before = acknowledged.filter((task) => task.beforeCrash);
    const dueInGap = before.filter(
      (task) => task.dueAt.getTime() >= crashAt && task.dueAt.getTime() < promotedAt,
    ).length;
    // The failover happened under load: tasks committed before it, some due while no primary answered.
    expect(before.length).toBeGreaterThan(20);
    expect(dueInGap).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(before.length);
    const [lateness] = await onPrimary<{ max_ms: number; p99_ms: number }>(
      primary,
      `SELECT round(extract(epoch FROM max(ran_at - due_at)) * 1000)::int AS max_ms,
              round(extract(epoch FROM percentile_cont(0.99) WITHIN GROUP (ORDER BY ran_at - due_at)) * 1000)::int AS p99_ms
       FROM failover_effect`,
    );
    console.log(
      `failover: ${acknowledged.length} tasks acknowledged (${before.length} before the crash, ` +
        `${dueInGap} of them due in the ${promotedAt - crashAt} ms without a primary), ` +
        `${unanswered} schedule() calls failed; duplicates 0, lost 0, early 0; ` +
        `lateness max ${lateness.max_ms} ms, p99 ${lateness.p99_ms} ms; ` +
        `${logger.messages('error').length} errors logged (connections lost, claims retried)`,
    );
  }, 180_000);
});

async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still not so after ${timeoutMs} ms`);
    await sleep(200);
  }
}
