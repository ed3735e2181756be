/**
 * The engine as a user would run it, through its public API only: TypeORM
 * with `delayMigrations`, `DelayModule.forRoot`, one `@DelayedTaskHandler`,
 * `DelayService.scheduleMany`. The handler reports when it starts (pickup)
 * and the module's observer when a task's claim committed (completion).
 */
import 'reflect-metadata';
import {
  Injectable,
  Module,
  type INestApplicationContext,
  type LoggerService,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DelayModule, DelayService, DelayedTaskHandler, delayMigrations } from 'nest-delay';
import { sleep, type LongSystem } from '../long-system.js';

const TASK_TYPE = 'bench.job';

export interface EngineSettings {
  url: string;
  workers: number;
  workMs: number;
  payloadBytes: number;
}

export interface EngineEvents {
  /** A handler started `latencyMs` after its task's insert began, at `atMs`. */
  pickedUp(latencyMs: number, atMs: number): void;
  /** A task's claim transaction committed. */
  completed(): void;
}

interface JobPayload {
  /** Epoch ms with a fraction, taken as the insert call begins. */
  enqueuedAt: number;
  pad: string;
}

/** Wall-clock epoch ms with sub-millisecond precision. */
export const preciseNow = () => performance.timeOrigin + performance.now();

/** Nest's own logger writes to stdout, which here carries telemetry only. */
const stderrLogger: LoggerService = {
  log: () => {},
  warn: (message: unknown) => console.error(`[nest-delay] warn: ${String(message)}`),
  error: (message: unknown, trace?: unknown) =>
    console.error(`[nest-delay] error: ${String(message)}${trace ? `\n${String(trace)}` : ''}`),
};

export function createAdapterEngine(settings: EngineSettings, events: EngineEvents): LongSystem {
  // The JSON around the padding ({"enqueuedAt":…,"pad":""}) is about 40 bytes.
  const pad = 'x'.repeat(Math.max(0, settings.payloadBytes - 40));

  @Injectable()
  class BenchJobs {
    @DelayedTaskHandler(TASK_TYPE)
    async run(payload: JobPayload): Promise<void> {
      const now = preciseNow();
      events.pickedUp(now - payload.enqueuedAt, now);
      if (settings.workMs > 0) await sleep(settings.workMs);
    }
  }

  @Module({
    imports: [
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: settings.url,
        migrations: delayMigrations,
        migrationsRun: true,
        // A claim holds a connection while its handlers run: one per worker,
        // plus the lease heartbeat, the window loads and the producer's inserts.
        poolSize: settings.workers + 3,
        extra: { application_name: 'nest-delay-bench' },
        retryAttempts: 0,
      }),
      DelayModule.forRoot({
        concurrency: settings.workers,
        observer: { onExecuted: () => events.completed() },
        // The harness allows 5 s from SIGTERM to exit: leave room after the drain.
        shutdownTimeout: '2s',
      }),
    ],
    providers: [BenchJobs],
  })
  class BenchModule {}

  let app: INestApplicationContext | undefined;
  let delay: DelayService;
  return {
    async start() {
      app = await NestFactory.createApplicationContext(BenchModule, { logger: stderrLogger });
      delay = app.get(DelayService);
    },
    async schedule(tasks) {
      const enqueuedAt = preciseNow();
      await delay.scheduleMany(
        tasks.map((t) => ({
          type: TASK_TYPE,
          payload: { enqueuedAt, pad } satisfies JobPayload,
          runAt: t.dueMs,
        })),
      );
    },
    async stop() {
      await app?.close();
    },
  };
}
