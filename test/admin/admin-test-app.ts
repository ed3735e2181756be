import { Injectable, Module, type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { DelayedTaskHandler, DelayService, TaskOutcome } from 'nest-delay';
import { DelayTester, ManualClock, useManualClock } from 'nest-delay/testing';
import { AppModule } from '../../src/app.module.js';
import { loadConfig } from '../../src/config/app-config.js';
import { configureApp } from '../../src/configure-app.js';
import { withTestAuth } from '../support/app-factory.js';
import {
  createTestDatabase,
  preparedStatementsEnv,
  type TestDatabase,
} from '../support/test-database.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef0123456789';
export const TEST_TYPE = 'admin.test';
/** A type with shared limits of its own: 2 at once and 50 starts a second, per merchant. */
export const LIMITED_TYPE = 'admin.limited';
/** Fails its first run, snoozes its second for 5 minutes, completes its third. */
export const FLAKY_TYPE = 'admin.flaky';

/**
 * The test handler's runs, by task id; a payload `{ fail: true }` makes it
 * throw, until its id is put in `healed` (the fix deployed, say).
 */
export class AdminTestRuns {
  readonly ran: string[] = [];
  readonly healed = new Set<string>();
  /** LIMITED_TYPE's runs, by task id, in the order they started. */
  readonly limitedRan: string[] = [];
  /** FLAKY_TYPE's runs so far, by task id. */
  readonly flakyRuns = new Map<string, number>();
}

@Injectable()
class AdminTestHandler {
  constructor(private readonly runs: AdminTestRuns) {}

  @DelayedTaskHandler(TEST_TYPE)
  run(payload: { fail?: boolean } | null, { task }: { task: { id: string } }) {
    this.runs.ran.push(task.id);
    if (payload?.fail && !this.runs.healed.has(task.id))
      throw new Error(`planned failure of task ${task.id}`);
  }

  @DelayedTaskHandler(LIMITED_TYPE, {
    limit: {
      concurrency: 2,
      rate: { starts: 50, per: '1s' },
      key: (payload: { merchant?: string } | null) => payload?.merchant ?? 'none',
    },
  })
  limited(_payload: unknown, { task }: { task: { id: string } }) {
    this.runs.limitedRan.push(task.id);
  }

  @DelayedTaskHandler(FLAKY_TYPE)
  flaky(_payload: unknown, { task }: { task: { id: string } }): TaskOutcome | void {
    const run = (this.runs.flakyRuns.get(task.id) ?? 0) + 1;
    this.runs.flakyRuns.set(task.id, run);
    if (run === 1) throw new Error('the payment provider timed out');
    if (run === 2) return TaskOutcome.snooze('5m');
  }
}

/** The real AppModule over HTTP (admin API mounted by ADMIN_TOKEN), plus one test task type. */
export interface AdminTestApp {
  app: INestApplication;
  clock: ManualClock;
  tester: DelayTester;
  delay: DelayService;
  runs: AdminTestRuns;
  http(): ReturnType<typeof request>;
  /** A request with the admin token. */
  get(path: string): request.Test;
  post(path: string, body?: object): request.Test;
  put(path: string, body?: unknown): request.Test;
  delete(path: string): request.Test;
  query<T = any>(sql: string, params?: unknown[]): Promise<T[]>;
  /** The task's row as the table has it, to assert that nothing changed. */
  row(id: string): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function createAdminTestApp(
  db: TestDatabase,
  env: Record<string, string> = { ADMIN_TOKEN },
  { clock = new ManualClock(), logger }: { clock?: ManualClock; logger?: LoggerService } = {},
): Promise<AdminTestApp> {
  // The app's own schedule (the Idempotency-Key purge) would add its tasks to
  // every count these tests assert: off, unless a test turns it on.
  const config = loadConfig({
    DB_POOL_SIZE: String(db.poolSize),
    ORDER_IDEMPOTENCY_PURGE_EVERY: 'off',
    ...preparedStatementsEnv,
    ...withTestAuth(env),
  });
  const runs = new AdminTestRuns();
  @Module({
    providers: [{ provide: AdminTestRuns, useValue: runs }, AdminTestHandler],
  })
  class AdminTestHandlers {}
  const moduleRef = await useManualClock(
    Test.createTestingModule({ imports: [AppModule.forRoot(config, db.url), AdminTestHandlers] }),
    clock,
  ).compile();
  const app = configureApp(
    moduleRef.createNestApplication({
      logger: logger ?? (process.env.TEST_LOGS ? undefined : false),
    }),
    { trustProxy: config.trustProxy },
  );
  await app.init();
  const http = () => request(app.getHttpServer());
  const dataSource = app.get(DataSource);
  const query = <T = any>(sql: string, params: unknown[] = []): Promise<T[]> =>
    dataSource.query(sql, params);
  return {
    app,
    clock,
    tester: DelayTester.for(app),
    delay: app.get(DelayService),
    runs,
    http,
    get: (path) => http().get(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`),
    post: (path, body) => {
      const req = http().post(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
      return body === undefined ? req : req.send(body);
    },
    put: (path, body) => {
      const req = http().put(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
      return body === undefined ? req : req.send(body as object);
    },
    delete: (path) => http().delete(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`),
    query,
    async row(id) {
      const [row] = await query(`SELECT * FROM delayed_task WHERE id = $1`, [id]);
      return row;
    },
    close: () => app.close(),
  };
}

/** A database and an admin app for the enclosing describe; read `.t` inside tests. */
export function useAdminTestApp(
  env?: Record<string, string>,
  options?: { logger?: LoggerService; clock?: ManualClock },
): { readonly t: AdminTestApp } {
  let db: TestDatabase | undefined;
  let app: AdminTestApp | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    app = await createAdminTestApp(db, env, options);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  return {
    get t() {
      if (!app) throw new Error('useAdminTestApp: the app exists only inside tests and hooks');
      return app;
    },
  };
}
