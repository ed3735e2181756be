import {
  ConsoleLogger,
  Injectable,
  Module,
  type DynamicModule,
  type LoggerService,
} from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { EntityManager } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import {
  CLOCK,
  DelayModule,
  DelayService,
  DelayedTaskHandler,
  ManualClock,
  type DelayModuleOptions,
  type TaskContext,
} from 'nest-delay';
import type { TestDatabase } from '../support/test-database.js';
import { DelayRuntime } from '../../packages/nest-delay/src/delay.runtime.js';

/** What the test handlers do: record an effect row, or fail on demand. */
export class HandlerBehaviour {
  /** payload.fail = number of times to throw before succeeding (per task). */
  readonly failures = new Map<string, number>();
  /** Called in the handler after its write, to block or observe. */
  afterEffect: ((payload: any, context: TaskContext) => Promise<void> | void) | undefined;
  calls = 0;
}

export const EFFECT_TABLE = `
  CREATE TABLE IF NOT EXISTS effect (
    id bigserial PRIMARY KEY,
    task_id bigint NOT NULL,
    instance text NOT NULL,
    at timestamptz NOT NULL
  )`;

@Injectable()
export class TestHandlers {
  constructor(readonly behaviour: HandlerBehaviour) {}

  /** Writes one effect row in the claim transaction. */
  @DelayedTaskHandler('test.effect')
  async effect(payload: { fail?: number } | null, context: TaskContext) {
    const { task, manager } = context;
    this.behaviour.calls++;
    await record(manager, task.id, context.instanceId, task.executedAt ?? new Date());
    await this.behaviour.afterEffect?.(payload, context);
    const failed = this.behaviour.failures.get(task.id) ?? 0;
    if (payload?.fail !== undefined && failed < payload.fail) {
      this.behaviour.failures.set(task.id, failed + 1);
      throw new Error(`planned failure ${failed + 1} of task ${task.id}`);
    }
  }

  /** Writes its effect, then swallows a failed statement: the transaction is left aborted. */
  @DelayedTaskHandler('test.swallows-db-error')
  async swallowsDbError(_payload: unknown, { task, manager, instanceId }: TaskContext) {
    await record(manager, task.id, instanceId, new Date());
    await manager.query('SELECT * FROM no_such_table').catch(() => undefined);
  }

  @DelayedTaskHandler('test.always-fails')
  alwaysFails(): never {
    throw new Error('this handler always fails');
  }
}

async function record(manager: EntityManager, taskId: string, instance: string, at: Date) {
  await manager.query(`INSERT INTO effect (task_id, instance, at) VALUES ($1, $2, $3)`, [
    taskId,
    instance,
    at,
  ]);
}

@Module({})
class HandlersModule {
  static register(behaviour: HandlerBehaviour): DynamicModule {
    return {
      module: HandlersModule,
      providers: [{ provide: HandlerBehaviour, useValue: behaviour }, TestHandlers],
    };
  }
}

export interface DelayTestApp {
  moduleRef: TestingModule;
  delay: DelayService;
  runtime: DelayRuntime;
  clock: ManualClock;
  behaviour: HandlerBehaviour;
  query<T = any>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export async function createDelayTestApp(
  db: TestDatabase,
  options: DelayModuleOptions = {},
  clock: ManualClock = new ManualClock(),
  extraProviders: DynamicModule[] = [],
  /** Runs after the module is compiled and before it boots: to wrap the runtime's parts. */
  beforeInit?: (runtime: DelayRuntime) => void,
): Promise<DelayTestApp> {
  const behaviour = new HandlerBehaviour();
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({
        ...dataSourceOptions({ url: db.url, poolSize: db.poolSize, migrationsRun: true }),
        // Some tests make queries fail on purpose; TEST_LOGS=1 shows them.
        logging: process.env.TEST_LOGS ? ['error', 'warn'] : false,
        retryAttempts: 0,
      }),
      DelayModule.forRoot({ concurrency: db.isServer ? undefined : 1, ...options }),
      HandlersModule.register(behaviour),
      ...extraProviders,
    ],
  })
    .overrideProvider(CLOCK)
    .useValue(clock)
    .setLogger(process.env.TEST_LOGS ? new ConsoleLogger() : new SilentLogger())
    .compile();
  const { DataSource } = await import('typeorm');
  const dataSource = moduleRef.get(DataSource);
  await dataSource.query(EFFECT_TABLE);
  beforeInit?.(moduleRef.get(DelayRuntime));
  try {
    await moduleRef.init();
  } catch (error) {
    // A failed boot must not leave its pool open behind the test.
    await moduleRef.close().catch(() => undefined);
    throw error;
  }
  return {
    moduleRef,
    delay: moduleRef.get(DelayService),
    runtime: moduleRef.get(DelayRuntime),
    clock,
    behaviour,
    query: (sql, params) => dataSource.query(sql, params),
    close: () => moduleRef.close(),
  };
}

class SilentLogger implements LoggerService {
  log() {}
  warn() {}
  error() {}
  debug() {}
  verbose() {}
}
