import type { DataSourceOptions } from 'typeorm';
import { migrations } from '../../migrations/index.js';
import { TypeOrmLogger } from './typeorm-logger.js';

export interface DatabaseSettings {
  url: string;
  poolSize: number;
  migrationsRun?: boolean;
  entities?: DataSourceOptions['entities'];
}

/** One DataSource definition for the app, the migration CLI and the tests. */
export function dataSourceOptions(settings: DatabaseSettings): DataSourceOptions {
  return {
    type: 'postgres',
    url: settings.url,
    entities: settings.entities ?? [],
    migrations,
    migrationsRun: settings.migrationsRun ?? false,
    migrationsTransactionMode: 'each',
    // The schema under test and in production is the migrations' one, never a guess.
    synchronize: false,
    poolSize: settings.poolSize,
    // A pool of fixed size: an idle connection is never closed (pg-pool closes
    // only those above `min`), so the connections opened at start (PoolWarmup)
    // are there when a backlog's claims take their share.
    extra: { max: settings.poolSize, min: settings.poolSize },
    logging: ['error', 'warn', 'migration'],
    logger: new TypeOrmLogger(),
  };
}
