import { Module, type DynamicModule } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { AppConfig } from './config/app-config.js';
import { APP_CONFIG } from './config/app-config.token.js';
import { dataSourceOptions } from './database/data-source-options.js';
import { DelayModule } from 'nest-delay';
import { OrdersModule } from './orders/orders.module.js';

/**
 * The whole service: validated configuration, the database (migrated at
 * start unless told not to), DelayModule and the modules that use it.
 * `databaseUrl` is the server from DATABASE_URL or the embedded Postgres.
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, databaseUrl: string): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot({
          isGlobal: true,
          ignoreEnvFile: true,
          load: [() => ({ app: config })],
        }),
        TypeOrmModule.forRoot({
          ...dataSourceOptions({
            url: databaseUrl,
            poolSize: config.dbPoolSize,
            migrationsRun: config.migrationsRun,
          }),
          autoLoadEntities: true,
          // A missing database should fail the start at once, not after 9 × 3 s of retries.
          retryAttempts: 0,
        }),
        DelayModule.forRoot({
          tickMs: config.delayTickMs,
          slots: config.delayWheelSlots,
          window: config.delayWindowMs,
          concurrency: config.delayConcurrency,
          lease: config.delayLeaseMs,
          retry: { maxAttempts: config.delayMaxAttempts },
          instanceId: config.delayInstanceId,
        }),
        OrdersModule,
      ],
      providers: [{ provide: APP_CONFIG, useValue: config }],
      exports: [APP_CONFIG],
      global: true,
    };
  }
}
