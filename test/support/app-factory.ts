import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AppModule } from '../../src/app.module.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { configureApp } from '../../src/configure-app.js';
import { DelayTester, ManualClock, useManualClock } from 'nest-delay/testing';
import { TEST_AUTH_SECRET } from './auth.js';
import { preparedStatementsEnv, type TestDatabase } from './test-database.js';

export interface TestApp {
  app: INestApplication;
  clock: ManualClock;
  /** The delay module's test driver: `advance`, `assertScheduled`, `perform`. */
  delay: DelayTester;
  config: AppConfig;
}

/**
 * Users' tokens are HS256 with TEST_AUTH_SECRET (test/support/auth.ts signs
 * them), unless `env` sets an AUTH_* variable of its own.
 */
export function withTestAuth(env: Record<string, string>): Record<string, string> {
  const own = ['AUTH_JWT_SECRET', 'AUTH_JWKS_URL', 'AUTH_DISABLED'].some((name) => name in env);
  return own ? env : { AUTH_JWT_SECRET: TEST_AUTH_SECRET, ...env };
}

/**
 * The real AppModule over HTTP, on the test database, with a ManualClock in
 * place of the system clock: `delay.advance('48h')` moves 48 hours in
 * milliseconds and runs what fell due, with no sleeps and no fake timers.
 */
export async function createTestApp(
  db: TestDatabase,
  env: Record<string, string> = {},
  clock = new ManualClock(),
): Promise<TestApp> {
  const config = loadConfig({
    DB_POOL_SIZE: String(db.poolSize),
    ...preparedStatementsEnv,
    ...withTestAuth(env),
  });
  const moduleRef = await useManualClock(
    Test.createTestingModule({ imports: [AppModule.forRoot(config, db.url)] }),
    clock,
  ).compile();
  const app = configureApp(moduleRef.createNestApplication({ logger: ['error'] }));
  await app.init();
  return { app, clock, delay: DelayTester.for(app), config };
}
