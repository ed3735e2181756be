/**
 * TypeORM on the bench database as the app configures it (its migrations run
 * at start), for the Nest apps the bench hosts: this project and its floor.
 */
import { TypeOrmModule } from '@nestjs/typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import type { SystemSettings } from './system.js';

export function benchTypeOrm(settings: SystemSettings) {
  return TypeOrmModule.forRoot({
    ...dataSourceOptions({
      url: settings.databaseUrl,
      poolSize: settings.poolSize,
      migrationsRun: true,
    }),
    retryAttempts: 0,
  });
}
