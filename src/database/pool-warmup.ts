import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { DataSource, type QueryRunner } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/app-config.token.js';

/**
 * Opens every connection of the pool at start, before the engine claims
 * anything; with the pool's `min` at its size (dataSourceOptions) none is
 * closed for being idle. So the share the claims leave to requests is open
 * already when a backlog comes: a request need not open a connection while
 * the claims hold the others, when opening one is slowest, or refused (the
 * server at max_connections, a failover beginning), which is a 5xx. A
 * connection the server ends is opened again on demand, as before.
 */
@Injectable()
export class PoolWarmup implements OnModuleInit {
  private readonly logger = new Logger('PoolWarmup');

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    const size = this.config.dbPoolSize;
    const runners = Array.from({ length: size }, () => this.dataSource.createQueryRunner());
    // All at once: each holds its connection until every one is open.
    const opened = await Promise.allSettled(runners.map((runner) => runner.connect()));
    await Promise.all(runners.map((runner: QueryRunner) => runner.release()));
    const failed = opened.filter((result) => result.status === 'rejected');
    if (failed.length > 0) {
      const reason = (failed[0] as PromiseRejectedResult).reason as unknown;
      this.logger.warn(
        `Opened ${size - failed.length} of the pool's ${size} connections at start (DB_POOL_SIZE); ` +
          `the rest open when needed: ${reason instanceof Error ? reason.message : String(reason)}`,
      );
    }
  }
}
