import { stopTracing } from './tracing.js';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { ConfigError, loadConfig } from './config/app-config.js';
import { configureApp } from './configure-app.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './database/embedded-postgres.js';
import { AppLogger } from './ops/logging/app-logger.js';

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const appLogger = new AppLogger({ format: config.logFormat, level: config.logLevel });
  // Every `new Logger(context)` (the app's and nest-delay's) writes through it from here on.
  Logger.overrideLogger(appLogger);
  const logger = new Logger('Bootstrap');
  let embedded: EmbeddedPostgres | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres(config.pgliteDir);
    databaseUrl = embedded.url;
    logger.log(
      `DATABASE_URL is not set: using the embedded Postgres (PGlite) in ${config.pgliteDir}`,
    );
  }
  const app = await NestFactory.create(AppModule.forRoot(config, databaseUrl), {
    logger: appLogger,
  });
  configureApp(app, { trustProxy: config.trustProxy });
  // Our own signal handling rather than enableShutdownHooks(): app.close() runs
  // every shutdown hook (the delay runtime drains, TypeORM closes its pool) and
  // only then may the embedded database stop.
  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    logger.log(`${signal} received, shutting down`);
    app
      .close()
      .then(() => embedded?.stop())
      // The last spans (this shutdown's included) leave before the process does.
      .then(() => stopTracing())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          console.error('Shutdown failed:', error);
          process.exit(1);
        },
      );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  await app.listen(config.port, '0.0.0.0');
  logger.log(`Listening on http://localhost:${config.port}`);
}

bootstrap().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(error.message);
  } else {
    console.error(
      'Failed to start:',
      error instanceof Error ? (error.stack ?? error.message) : error,
    );
  }
  process.exit(1);
});
