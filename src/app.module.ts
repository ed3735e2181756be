import { Module, type DynamicModule } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { AppConfig } from './config/app-config.js';
import { APP_CONFIG } from './config/app-config.token.js';
import { dataSourceOptions } from './database/data-source-options.js';
import { PoolWarmup } from './database/pool-warmup.js';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { DelayModule } from 'nest-delay';
import { OrdersModule } from './orders/orders.module.js';
import { DelayAdminModule } from 'nest-delay/admin';
import { DelayEventsBridge } from './ops/events/delay-events.bridge.js';
import { OpsEventsModule } from './ops/events/ops-events.module.js';
import { HealthModule } from './ops/health/health.module.js';
import { MetricsModule } from './ops/metrics/metrics.module.js';
import { TaskMetrics } from './ops/metrics/task-metrics.js';
import { combineObservers } from './ops/delay-observer.js';

/**
 * The whole service: validated configuration, the database (migrated at
 * start unless told not to), DelayModule and the modules that use it, and
 * operations (probes, metrics, events) and nest-delay's admin page and API
 * when ADMIN_TOKEN is set. `databaseUrl` is the server from DATABASE_URL or the embedded Postgres.
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
        // Global, and before anything that emits; listener errors are logged (suppressErrors).
        EventEmitterModule.forRoot(),
        DelayModule.forRootAsync({
          imports: [OpsEventsModule, ...(config.metricsEnabled ? [MetricsModule] : [])],
          inject: [DelayEventsBridge, { token: TaskMetrics, optional: true }],
          useFactory: (bridge: DelayEventsBridge, metrics: TaskMetrics | undefined) => ({
            tickMs: config.delayTickMs,
            slots: config.delayWheelSlots,
            window: config.delayWindowMs,
            concurrency: config.delayConcurrency,
            lease: config.delayLeaseMs,
            retry: { maxAttempts: config.delayMaxAttempts },
            instanceId: config.delayInstanceId,
            preparedStatements: config.delayPreparedStatements,
            // Metrics count directly; the bridge emits what someone listens to.
            // Neither on: no observer, and the engine builds no event at all.
            observer: combineObservers([
              ...(metrics ? [metrics] : []),
              ...(config.eventsEnabled ? [bridge] : []),
            ]),
          }),
        }),
        OrdersModule.register({
          purgeEveryMs: config.orderIdempotencyPurgeEveryMs,
          notifyRatePerSecond: config.notifyRatePerSecond,
          auth: config.auth,
        }),
        HealthModule,
        ...(config.metricsEnabled ? [MetricsModule] : []),
        // No token, no admin routes at all: they answer 404 like any unknown path.
        ...(config.adminToken
          ? [
              DelayAdminModule.forRoot({
                path: '/admin',
                token: config.adminToken,
                countCap: config.adminCountCap,
                entity: { name: 'Order', prefix: 'order:' },
              }),
            ]
          : []),
      ],
      providers: [{ provide: APP_CONFIG, useValue: config }, PoolWarmup],
      exports: [APP_CONFIG],
      global: true,
    };
  }
}
