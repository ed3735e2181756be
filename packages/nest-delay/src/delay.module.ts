import { Logger, Module, type DynamicModule } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { DelayAdmin } from './admin/delay-admin.service.js';
import type { DataSource } from 'typeorm';
import { CLOCK } from './clock/index.js';
import { measuredDatabaseClock } from './lease/clock-watch.js';
import { PreparedStatements } from './store/claim-connection.js';
import { openDatabase } from './store/sql.js';
import {
  DELAY_ASYNC_OPTIONS_TYPE,
  DELAY_MODULE_OPTIONS,
  DelayConfigurableModule,
} from './delay.module-definition.js';
import { DelayExplorer } from './delay.explorer.js';
import {
  resolveDelayOptions,
  type DelayModuleOptions,
  type ResolvedDelayOptions,
} from './delay.options.js';
import { assertKnownAsyncOptions, assertKnownOptions } from './option-keys.js';
import { DelayService } from './delay.service.js';
import {
  DELAY_DATABASE,
  DELAY_DATA_SOURCE,
  DELAY_OBSERVER_CALLS,
  DELAY_OPTIONS,
  DELAY_TRACING,
} from './delay.tokens.js';
import { HandlerRegistry } from './handler-registry.js';
import { DelayRuntime } from './runtime/delay.runtime.js';
import { loadTaskTracing } from './tracing/task-tracing.js';
import { DelaySchedules } from './schedules/delay-schedules.service.js';
import { DelayLimits } from './limits/delay-limits.service.js';
import { ScheduleRegistry } from './schedules/schedule-registry.js';

/**
 * `DelayModule.forRoot({ ...options, dataSource?, isGlobal? })` or
 * `forRootAsync({ useFactory, inject, dataSource?, isGlobal? })`: exports
 * DelayService, and DelayAdmin for operators' tools (global by default). Runs
 * on the options' `connection` (a pg pool of its own) or else on the app's
 * TypeORM DataSource; the schema comes from `delayMigrations` (in the
 * DataSource's migrations, or `migrateDelaySchema`). Tests swap CLOCK for a ManualClock
 * (see `nest-delay/testing`).
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    // Measured before any provider that reads it is built (DatabaseClock).
    {
      provide: DELAY_OPTIONS,
      // A misspelt key stops the boot first, naming it; then each value is checked.
      useFactory: (options: DelayModuleOptions) => resolveDelayOptions(assertKnownOptions(options)),
      inject: [DELAY_MODULE_OPTIONS],
    },
    {
      provide: DELAY_DATABASE,
      useFactory: (options: ResolvedDelayOptions, dataSource: DataSource | null) =>
        openDatabase(
          options.connection,
          dataSource,
          // Told once, if a pooler refuses prepared statements (claim-connection.ts).
          new PreparedStatements(options.preparedStatements, (why) =>
            new Logger('DelayModule').warn(why),
          ),
        ),
      inject: [DELAY_OPTIONS, DELAY_DATA_SOURCE],
    },
    {
      provide: CLOCK,
      useFactory: measuredDatabaseClock,
      inject: [DELAY_DATABASE],
    },
    {
      provide: DELAY_TRACING,
      useFactory: async (options: ResolvedDelayOptions) =>
        (await loadTaskTracing(options.tracing, options.instanceId)) ?? null,
      inject: [DELAY_OPTIONS],
    },
    HandlerRegistry,
    ScheduleRegistry,
    DelayExplorer,
    DelayRuntime,
    DelayService,
    DelaySchedules,
    DelayLimits,
    DelayAdmin,
    // For nest-delay/admin's pulse; not in the public surface.
    {
      provide: DELAY_OBSERVER_CALLS,
      useFactory: (runtime: DelayRuntime) => runtime.ctx.observer,
      inject: [DelayRuntime],
    },
  ],
  exports: [DelayService, DelaySchedules, DelayLimits, DelayAdmin, CLOCK, DELAY_OBSERVER_CALLS],
})
export class DelayModule extends DelayConfigurableModule {
  static forRootAsync(options: typeof DELAY_ASYNC_OPTIONS_TYPE): DynamicModule {
    assertKnownAsyncOptions(options);
    return super.forRootAsync(options);
  }
}
