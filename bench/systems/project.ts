/**
 * This project as an app would use it: TypeORM on the bench database (its
 * migrations run at start), DelayModule, and one @DelayedTaskHandler that runs
 * the effect through the claim transaction's manager. With `observe`, the
 * app's own events bridge and Prometheus metrics as well (src/ops).
 */
import 'reflect-metadata';
import {
  Injectable,
  Module,
  type DynamicModule,
  type INestApplicationContext,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type pg from 'pg';
import { DataSource } from 'typeorm';
import {
  DelayModule,
  DelaySchedules,
  DelayService,
  DelayedTaskHandler,
  type TaskContext,
} from 'nest-delay';
import { EFFECT_SQL, OCCURRENCE_SQL } from '../harness/db.js';
import type { Task } from '../harness/plan.js';
import { RECURRING_TYPE, TASK_TYPE } from '../harness/project-db.js';
import { benchTypeOrm } from './bench-typeorm.js';
import type { BenchTracing } from './bench-tracing.js';
import type { SystemFactory, SystemSettings } from './system.js';

const BALLAST_TYPE = 'bench.ballast';

@Injectable()
class BenchHandlers {
  @DelayedTaskHandler(TASK_TYPE)
  async effect(payload: { orderId: number }, { manager }: TaskContext): Promise<void> {
    await manager.query(EFFECT_SQL, [payload.orderId]);
  }

  /** Each occurrence of the `recurring` workload's schedules: one row, through the claim's manager. */
  @DelayedTaskHandler(RECURRING_TYPE)
  async occurrence(_payload: null, { manager, occurrence, task }: TaskContext): Promise<void> {
    await manager.query(OCCURRENCE_SQL, [
      occurrence?.schedule ?? null,
      occurrence?.scheduledAt ?? null,
      occurrence?.previousAt ?? null,
      task.dueAt,
    ]);
  }

  /** Never runs within a bench: ballast is due long after the run ends. */
  @DelayedTaskHandler(BALLAST_TYPE)
  ballast(): void {}
}

/**
 * The app's observability (src/ops, and through it @nestjs/swagger,
 * prom-client, EventEmitter2) is imported only when it is on: loaded, it
 * holds ~5 MB of heap and 6–10 MB of RSS at rest, which a run without it
 * must not be charged.
 */
async function observedDelayModule(options: object): Promise<DynamicModule[]> {
  const [{ EventEmitterModule }, events, bridge, observer, metricsModule, metrics] =
    await Promise.all([
      import('@nestjs/event-emitter'),
      import('../../src/ops/events/ops-events.module.js'),
      import('../../src/ops/events/delay-events.bridge.js'),
      import('../../src/ops/delay-observer.js'),
      import('../../src/ops/metrics/metrics.module.js'),
      import('../../src/ops/metrics/task-metrics.js'),
    ]);
  type Bridge = InstanceType<typeof bridge.DelayEventsBridge>;
  type Metrics = InstanceType<typeof metrics.TaskMetrics>;
  return [
    EventEmitterModule.forRoot(),
    DelayModule.forRootAsync({
      imports: [events.OpsEventsModule, metricsModule.MetricsModule],
      inject: [bridge.DelayEventsBridge, metrics.TaskMetrics],
      useFactory: (delayEvents: Bridge, taskMetrics: Metrics) => ({
        ...options,
        observer: observer.combineObservers([taskMetrics, delayEvents]),
      }),
    }),
  ];
}

@Module({})
class BenchAppModule {
  static async forRoot(settings: SystemSettings): Promise<DynamicModule> {
    const options = {
      tickMs: settings.tickMs ?? 1000,
      concurrency: settings.concurrency,
      ...(settings.retention ? { retention: settings.retention } : {}),
      ...(settings.tracing === 'disabled' ? { tracing: false } : {}),
    };
    return {
      module: BenchAppModule,
      imports: [
        benchTypeOrm(settings),
        ...(settings.observe ? await observedDelayModule(options) : [DelayModule.forRoot(options)]),
      ],
      providers: [BenchHandlers],
    };
  }
}

export const createProject: SystemFactory = (settings) => {
  let app: INestApplicationContext | undefined;
  let delay: DelayService;
  let tracing: BenchTracing | undefined;
  const pool = () => (app!.get(DataSource).driver as unknown as { master: pg.Pool }).master;
  // BENCH_ENTITY=1 (bench:timeline): each task names its order, so the timeline's history is written.
  const withEntity = process.env.BENCH_ENTITY === '1';
  const request = (task: Task) => ({
    type: TASK_TYPE,
    payload: { orderId: task.orderId },
    runAt: task.dueAtMs,
    ...(withEntity ? { entity: `order:${task.orderId}` } : {}),
  });
  return {
    async start() {
      // Registered before the module boots, as an app's tracing starts first.
      if (settings.tracing === 'on')
        tracing = await (await import('./bench-tracing.js')).startBenchTracing();
      app = await NestFactory.createApplicationContext(await BenchAppModule.forRoot(settings), {
        logger: ['error', 'warn'],
      });
      delay = app.get(DelayService);
      // Held in the wheel (the window is an hour) while the measured tasks fire.
      const ballast = settings.ballast ?? 0;
      const now = Date.now();
      for (let from = 0; from < ballast; from += 5_000) {
        await delay.scheduleMany(
          Array.from({ length: Math.min(5_000, ballast - from) }, (_, i) => ({
            type: BALLAST_TYPE,
            runAt: now + 20 * 60_000 + (((from + i) * 7_919) % (30 * 60_000)),
          })),
        );
      }
    },
    async scheduleOne(task) {
      await delay.schedule(request(task));
    },
    async scheduleMany(tasks) {
      // Traced, the tasks are scheduled inside a span: each row carries its context.
      if (tracing)
        await tracing.inSpan('bench.schedule', () => delay.scheduleMany(tasks.map(request)));
      else await delay.scheduleMany(tasks.map(request));
    },
    // The rows schedule() and scheduleMany() write (no key; leased to this
    // instance, as the API leases what falls due within its window, so the
    // loader leaves them alone too), by bare INSERTs on the DataSource's pool.
    async bareScheduleOne(task) {
      await pool().query(
        `INSERT INTO delayed_task (type, payload, due_at, max_attempts, locked_by, created_at, updated_at)
         VALUES ($1, $2::jsonb, $3, $4, $5, $6, $6)`,
        [
          TASK_TYPE,
          JSON.stringify({ orderId: task.orderId }),
          new Date(task.dueAtMs),
          5,
          delay.stats().instanceId,
          new Date(),
        ],
      );
    },
    async bareScheduleMany(tasks) {
      await pool().query(
        `INSERT INTO delayed_task (type, payload, due_at, max_attempts, locked_by, created_at, updated_at)
         SELECT $1, payload::jsonb, due_at, $4, $5, $6, $6
         FROM unnest($2::text[], $3::timestamptz[]) AS t(payload, due_at)`,
        [
          TASK_TYPE,
          tasks.map((t) => JSON.stringify({ orderId: t.orderId })),
          tasks.map((t) => new Date(t.dueAtMs)),
          5,
          delay.stats().instanceId,
          new Date(),
        ],
      );
    },
    // Through DelaySchedules, as an app adds schedules at run time: one upsert each.
    async upsertSchedules(list) {
      const schedules = app!.get(DelaySchedules);
      for (const { name, every, cron } of list)
        await schedules.upsert(name, {
          type: RECURRING_TYPE,
          ...(every === undefined ? { cron } : { every }),
        });
    },
    async stop() {
      await app?.close();
      if (tracing) {
        await tracing.shutdown();
        // On stderr (BENCH_VERBOSE=1 shows it): every handler run was a span.
        process.stderr.write(`[bench tracing] ${tracing.exported()} spans exported\n`);
        tracing = undefined;
      }
    },
  };
};
