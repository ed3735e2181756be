/**
 * This project through its public API only: TypeORM with the engine's
 * migrations, DelayModule, one @DelayedTaskHandler doing ~1 ms of work and
 * writing the ledger row through the claim transaction's manager.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  DelayModule,
  DelayService,
  DelayedTaskHandler,
  delayMigrations,
  type TaskContext,
} from 'nest-delay';
import { INSERT_LEDGER } from './ledger-statements.js';
import { WORK_MS, sleep, type LongSystem, type LongSystemSettings } from './long-system.js';

const TASK_TYPE = 'long.effect';
/** Set before the module boots: Nest builds the handler, the instance index is the process's. */
let instanceIndex = 0;

@Injectable()
class LongHandlers {
  @DelayedTaskHandler(TASK_TYPE)
  async effect(payload: { id: number; due: number }, { manager }: TaskContext): Promise<void> {
    const started = Date.now();
    await sleep(WORK_MS);
    await manager.query(INSERT_LEDGER, [payload.id, payload.due, started, instanceIndex]);
  }
}

export function createNestDelaySystem(settings: LongSystemSettings): LongSystem {
  let app: INestApplicationContext | undefined;
  let delay: DelayService;
  @Module({
    imports: [
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: settings.url,
        migrations: delayMigrations,
        migrationsRun: true,
        poolSize: 10,
        extra: { max: 10, application_name: `long-sut-${settings.instance}` },
        retryAttempts: 0,
      }),
      DelayModule.forRoot({
        concurrency: settings.workers,
        // For a same-run A/B of the option (bench/HISTORY.md); the default otherwise.
        preparedStatements: process.env.BENCH_PREPARED_STATEMENTS !== 'false',
      }),
    ],
    providers: [LongHandlers],
  })
  class LongAppModule {}
  return {
    async start() {
      instanceIndex = settings.instance;
      app = await NestFactory.createApplicationContext(LongAppModule, {
        logger: ['error', 'warn'],
      });
      delay = app.get(DelayService);
    },
    async schedule(tasks) {
      await delay.scheduleMany(
        tasks.map((t) => ({
          type: TASK_TYPE,
          payload: { id: t.id, due: t.dueMs },
          runAt: t.dueMs,
        })),
      );
    },
    async stop() {
      await app?.close();
    },
  };
}
