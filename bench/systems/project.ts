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
import { TypeOrmModule } from '@nestjs/typeorm';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { DelayEventsBridge } from '../../src/ops/events/delay-events.bridge.js';
import { OpsEventsModule } from '../../src/ops/events/ops-events.module.js';
import { combineObservers } from '../../src/ops/delay-observer.js';
import { MetricsModule } from '../../src/ops/metrics/metrics.module.js';
import { TaskMetrics } from '../../src/ops/metrics/task-metrics.js';
import { DelayModule, DelayService, DelayedTaskHandler, type TaskContext } from 'nest-delay';
import { EFFECT_SQL } from '../harness/db.js';
import type { Task } from '../harness/plan.js';
import { TASK_TYPE } from '../harness/project-db.js';
import type { SystemFactory, SystemSettings } from './system.js';

const BALLAST_TYPE = 'bench.ballast';

@Injectable()
class BenchHandlers {
  @DelayedTaskHandler(TASK_TYPE)
  async effect(payload: { orderId: number }, { manager }: TaskContext): Promise<void> {
    await manager.query(EFFECT_SQL, [payload.orderId]);
  }

  /** Never runs within a bench: ballast is due long after the run ends. */
  @DelayedTaskHandler(BALLAST_TYPE)
  ballast(): void {}
}

@Module({})
class BenchAppModule {
  static forRoot(settings: SystemSettings): DynamicModule {
    const options = {
      tickMs: settings.tickMs ?? 1000,
      concurrency: settings.concurrency,
      ...(settings.retention ? { retention: settings.retention } : {}),
    };
    return {
      module: BenchAppModule,
      imports: [
        TypeOrmModule.forRoot({
          ...dataSourceOptions({
            url: settings.databaseUrl,
            poolSize: settings.poolSize,
            migrationsRun: true,
          }),
          retryAttempts: 0,
        }),
        ...(settings.observe
          ? [
              EventEmitterModule.forRoot(),
              DelayModule.forRootAsync({
                imports: [OpsEventsModule, MetricsModule],
                inject: [DelayEventsBridge, TaskMetrics],
                useFactory: (bridge: DelayEventsBridge, metrics: TaskMetrics) => ({
                  ...options,
                  observer: combineObservers([metrics, bridge]),
                }),
              }),
            ]
          : [DelayModule.forRoot(options)]),
      ],
      providers: [BenchHandlers],
    };
  }
}

export const createProject: SystemFactory = (settings) => {
  let app: INestApplicationContext | undefined;
  let delay: DelayService;
  const request = (task: Task) => ({
    type: TASK_TYPE,
    payload: { orderId: task.orderId },
    runAt: task.dueAtMs,
  });
  return {
    async start() {
      app = await NestFactory.createApplicationContext(BenchAppModule.forRoot(settings), {
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
      await delay.scheduleMany(tasks.map(request));
    },
    async stop() {
      await app?.close();
    },
  };
};
