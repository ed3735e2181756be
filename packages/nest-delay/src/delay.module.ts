import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import { CLOCK, SystemClock } from './clock/index.js';
import { DelayConfigurableModule } from './delay.module-definition.js';
import { DelayExplorer } from './delay.explorer.js';
import { DelayRuntime } from './delay.runtime.js';
import { DelayService } from './delay.service.js';
import { DELAY_DATA_SOURCE } from './delay.tokens.js';
import { HandlerRegistry } from './handler-registry.js';

/**
 * `DelayModule.forRoot({ ... })` or `forRootAsync({ useFactory, inject })`:
 * global by default, exports DelayService. Needs the app's default TypeORM
 * DataSource, with delayed_task's migration among its migrations.
 * Override the CLOCK provider with a ManualClock to move time in tests.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    { provide: CLOCK, useClass: SystemClock },
    // The application's default TypeORM DataSource (TypeOrmModule.forRoot).
    { provide: DELAY_DATA_SOURCE, useExisting: getDataSourceToken() },
    HandlerRegistry,
    DelayExplorer,
    DelayRuntime,
    DelayService,
  ],
  exports: [DelayService, CLOCK],
})
export class DelayModule extends DelayConfigurableModule {}
