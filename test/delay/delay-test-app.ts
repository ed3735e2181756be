import {
  ConsoleLogger,
  Injectable,
  Module,
  type DynamicModule,
  type LoggerService,
} from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule, getDataSourceToken } from '@nestjs/typeorm';
import pg from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import {
  DelayModule,
  DelayService,
  DelayedTaskHandler,
  TaskStateError,
  migrateDelaySchema,
  type DelayModuleOptions,
  type TaskContext,
} from 'nest-delay';
import { DelayTester, ManualClock, useManualClock } from 'nest-delay/testing';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** What the test handlers do: record an effect row, or fail on demand. */
export class HandlerBehaviour {
  /** payload.fail = number of times to throw before succeeding (per task). */
  readonly failures = new Map<string, number>();
  /** Called in the handler after its write, to block or observe. */
  afterEffect: ((payload: any, context: TaskContext) => Promise<void> | void) | undefined;
  calls = 0;
}

/** One row per handler run that committed: which task, on which instance, at which attempt. */
export const EFFECT_TABLE = `
  CREATE TABLE IF NOT EXISTS effect (
    id bigserial PRIMARY KEY,
    task_id bigint NOT NULL,
    instance text NOT NULL,
    attempt int NOT NULL,
    at timestamptz NOT NULL
  )`;

/** Writes one effect row through the handler's manager, so it commits with the task or not at all. */
export async function recordEffect(manager: EntityManager, context: TaskContext<unknown>) {
  await manager.query(
    `INSERT INTO effect (task_id, instance, attempt, at) VALUES ($1, $2, $3, $4)`,
    [context.task.id, context.instanceId, context.attempt, context.task.executedAt ?? new Date()],
  );
}

@Injectable()
export class TestHandlers {
  constructor(readonly behaviour: HandlerBehaviour) {}

  /** Writes one effect row in the claim transaction. */
  @DelayedTaskHandler('test.effect')
  async effect(payload: { fail?: number } | null, context: TaskContext) {
    const { task, manager } = context;
    this.behaviour.calls++;
    await recordEffect(manager, context);
    await this.behaviour.afterEffect?.(payload, context);
    const failed = this.behaviour.failures.get(task.id) ?? 0;
    if (payload?.fail !== undefined && failed < payload.fail) {
      this.behaviour.failures.set(task.id, failed + 1);
      throw new Error(`planned failure ${failed + 1} of task ${task.id}`);
    }
  }

  /** Writes its effect, then swallows a failed statement: the transaction is left aborted. */
  @DelayedTaskHandler('test.swallows-db-error')
  async swallowsDbError(_payload: unknown, context: TaskContext) {
    await recordEffect(context.manager, context);
    await context.manager.query('SELECT * FROM no_such_table').catch(() => undefined);
  }

  @DelayedTaskHandler('test.always-fails')
  alwaysFails(): never {
    throw new Error('this handler always fails');
  }
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
  /** The package's test driver: runDue, advance, held, refresh, crash, assertScheduled, perform. */
  tester: DelayTester;
  clock: ManualClock;
  behaviour: HandlerBehaviour;
  /** The DataSource the delay module uses (the named one when `dataSourceName` is given). */
  dataSource: DataSource;
  query<T = any>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Effect rows written for this task (committed handler runs). */
  effects(taskId: string): Promise<number>;
  /**
   * Cancels every pending task in the table through the API (so wheels let go
   * of them too) and runs what is due: a test that counts what runs starts
   * from a table where nothing else can run.
   */
  quiesce(): Promise<void>;
  close(): Promise<void>;
}

export interface DelayTestSetup {
  clock?: ManualClock;
  /** More modules beside the handlers (more handlers, a second DataSource...). */
  modules?: DynamicModule[];
  /** Runs after the module is compiled and before it boots: to wrap the runtime's parts. */
  beforeInit?: (moduleRef: TestingModule) => void;
  /** Receives Nest's log (default: silent, or the console with TEST_LOGS=1). */
  logger?: LoggerService;
  /** Register the DataSource under this name and give it to DelayModule as `dataSource`. */
  dataSourceName?: string;
  /**
   * No TypeORM at all: the schema from migrateDelaySchema, DelayModule on the
   * `connection` option (the database's URL), and `dataSource` a stand-in
   * that fails any use.
   */
  withoutTypeorm?: boolean;
}

/** Where an app without TypeORM has no DataSource: any use of it is a test's mistake. */
const NO_DATA_SOURCE = new Proxy({} as DataSource, {
  get(_, key) {
    throw new Error(`this test app runs without TypeORM: no DataSource (read ${String(key)})`);
  },
});

export async function createDelayTestApp(
  db: TestDatabase,
  options: DelayModuleOptions = {},
  setup: DelayTestSetup = {},
): Promise<DelayTestApp> {
  const { clock = new ManualClock(), modules = [], beforeInit, dataSourceName } = setup;
  const behaviour = new HandlerBehaviour();
  const ownPool = setup.withoutTypeorm
    ? new pg.Pool({ connectionString: db.url, max: db.poolSize })
    : undefined;
  if (ownPool) await migrateDelaySchema(ownPool);
  const moduleRef = await useManualClock(
    Test.createTestingModule({
      imports: [
        ...(ownPool
          ? []
          : [
              TypeOrmModule.forRoot({
                ...dataSourceOptions({ url: db.url, poolSize: db.poolSize, migrationsRun: true }),
                ...(dataSourceName === undefined ? {} : { name: dataSourceName }),
                // Some tests make queries fail on purpose; TEST_LOGS=1 shows them.
                logging: process.env.TEST_LOGS ? ['error', 'warn'] : false,
                retryAttempts: 0,
              }),
            ]),
        DelayModule.forRoot({
          concurrency: db.isServer ? undefined : 1,
          // PGlite keeps one session for every connection, as the example app knows (app-config.ts).
          preparedStatements: db.isServer && process.env.DELAY_PREPARED_STATEMENTS !== 'false',
          ...(ownPool ? { connection: ownPool } : {}),
          ...options,
          ...(dataSourceName === undefined ? {} : { dataSource: dataSourceName }),
        }),
        HandlersModule.register(behaviour),
        ...modules,
      ],
    }),
    clock,
  )
    .setLogger(setup.logger ?? (process.env.TEST_LOGS ? new ConsoleLogger() : new SilentLogger()))
    .compile();
  const dataSource = ownPool
    ? NO_DATA_SOURCE
    : moduleRef.get<DataSource>(getDataSourceToken(dataSourceName));
  const query = async <T = any>(sql: string, params?: unknown[]): Promise<T[]> =>
    ownPool ? (await ownPool.query(sql, params)).rows : dataSource.query(sql, params);
  try {
    await query(EFFECT_TABLE);
    beforeInit?.(moduleRef);
    await moduleRef.init();
  } catch (error) {
    // A failed boot must not leave its pool open behind the test.
    await moduleRef.close().catch(() => undefined);
    await ownPool?.end();
    throw error;
  }
  const delay = moduleRef.get(DelayService);
  const tester = DelayTester.for(moduleRef);
  return {
    moduleRef,
    delay,
    tester,
    clock,
    behaviour,
    dataSource,
    query,
    effects: async (taskId) =>
      (
        await query<{ n: number }>(`SELECT count(*)::int AS n FROM effect WHERE task_id = $1`, [
          taskId,
        ])
      )[0].n,
    async quiesce() {
      const pending = await query<{ id: string }>(
        `SELECT id FROM delayed_task
         WHERE executed_at IS NULL AND cancelled_at IS NULL AND dead_at IS NULL`,
      );
      for (const { id } of pending) {
        // Another instance may have run it meanwhile: that is fine here.
        await delay.cancel({ id }).catch((error: unknown) => {
          if (!(error instanceof TaskStateError)) throw error;
        });
      }
      await tester.runDue();
    },
    async close() {
      await moduleRef.close();
      await ownPool?.end();
    },
  };
}

export class SilentLogger implements LoggerService {
  log() {}
  warn() {}
  error() {}
  debug() {}
  verbose() {}
}

/** Keeps what Nest logs, to assert on warnings. */
export class CapturingLogger implements LoggerService {
  readonly entries: Array<{ level: string; message: string; context?: string; stack?: string }> =
    [];

  private add(level: string, message: unknown, rest: unknown[]) {
    const context = rest.length > 0 ? rest[rest.length - 1] : undefined;
    // error(message, stack, context), as Nest's Logger passes it on.
    const stack = level === 'error' && rest.length > 1 ? rest[0] : undefined;
    this.entries.push({
      level,
      message: String(message),
      context: typeof context === 'string' ? context : undefined,
      stack: typeof stack === 'string' ? stack : undefined,
    });
  }

  log(message: unknown, ...rest: unknown[]) {
    this.add('log', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]) {
    this.add('warn', message, rest);
  }
  error(message: unknown, ...rest: unknown[]) {
    this.add('error', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]) {
    this.add('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]) {
    this.add('verbose', message, rest);
  }

  messages(level: string): string[] {
    return this.entries.filter((e) => e.level === level).map((e) => e.message);
  }
}

export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** The highest task id so far ('0' if none): tests that insert rows in bulk look only above it. */
export async function lastTaskId(t: Pick<DelayTestApp, 'query'>): Promise<string> {
  const [row] = await t.query<{ id: string }>(
    `SELECT coalesce(max(id), 0)::text AS id FROM delayed_task`,
  );
  return row.id;
}

/**
 * One fresh database and app for the enclosing describe (or file): created
 * in beforeAll, closed and dropped in afterAll. Read `.t` inside tests.
 */
export function useDelayTestApp(
  options: DelayModuleOptions = {},
  setup: DelayTestSetup = {},
): { readonly t: DelayTestApp } {
  let db: TestDatabase | undefined;
  let app: DelayTestApp | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    app = await createDelayTestApp(db, options, setup);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  return {
    get t() {
      if (!app) throw new Error('useDelayTestApp: the app exists only inside tests and hooks');
      return app;
    },
  };
}
