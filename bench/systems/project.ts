/**
 * This project as an app would use it: TypeORM on the bench database (its
 * migrations run at start), DelayModule, and one @DelayedTaskHandler that runs
 * the effect through the claim transaction's manager.
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
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import {
  DelayModule,
  DelayService,
  DelayedTaskHandler,
  type TaskContext,
} from 'nest-delay';
import { EFFECT_SQL } from '../harness/db.js';
import type { Task } from '../harness/plan.js';
import { TASK_TYPE } from '../harness/project-db.js';
import type { SystemFactory, SystemSettings } from './system.js';

@Injectable()
class BenchHandlers {
  @DelayedTaskHandler(TASK_TYPE)
  async effect(payload: { orderId: number }, { manager }: TaskContext): Promise<void> {
    await manager.query(EFFECT_SQL, [payload.orderId]);
  }
}

@Module({})
class BenchAppModule {
  static forRoot(settings: SystemSettings): DynamicModule {
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
        DelayModule.forRoot({ tickMs: settings.tickMs ?? 1000, concurrency: settings.concurrency }),
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
