import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DelayRuntimeIndicator } from './delay-runtime.indicator.js';
import { HealthController } from './health.controller.js';
import { MigrationsIndicator } from './migrations.indicator.js';

/** /health/live and /health/ready (terminus). */
@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'pretty' })],
  controllers: [HealthController],
  providers: [MigrationsIndicator, DelayRuntimeIndicator],
})
export class HealthModule {}
