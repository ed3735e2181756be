import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AppModule } from '../../src/app.module.js';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';
import { configureApp } from '../../src/configure-app.js';
import { CLOCK, ManualClock } from 'nest-delay';
import type { TestDatabase } from './test-database.js';

export interface TestApp {
  app: INestApplication;
  clock: ManualClock;
  config: AppConfig;
}

/**
 * The real AppModule over HTTP, on the test database, with a ManualClock in
 * place of the system clock: `clock.advance(ms)` then `delay.drain()` moves
 * 48 hours in milliseconds, with no sleeps and no fake timers.
 */
export async function createTestApp(
  db: TestDatabase,
  env: Record<string, string> = {},
  clock = new ManualClock(),
): Promise<TestApp> {
  const config = loadConfig({ DB_POOL_SIZE: String(db.poolSize), ...env });
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(config, db.url)] })
    .overrideProvider(CLOCK)
    .useValue(clock)
    .compile();
  const app = configureApp(moduleRef.createNestApplication({ logger: ['error'] }));
  await app.init();
  return { app, clock, config };
}
