import { Module, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import { DelayGauges } from './delay-gauges.js';
import { HttpMetricsMiddleware } from './http-metrics.middleware.js';
import { LimitGauges } from './limit-gauges.js';
import { MetricsController } from './metrics.controller.js';
import { Metrics } from './metrics.js';
import { TaskMetrics } from './task-metrics.js';

/**
 * Prometheus metrics at /metrics. TaskMetrics is exported to be given to
 * DelayModule as (part of) its observer; see delay-observer.ts.
 */
@Module({
  controllers: [MetricsController],
  providers: [Metrics, TaskMetrics, DelayGauges, LimitGauges],
  exports: [Metrics, TaskMetrics],
})
export class MetricsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(HttpMetricsMiddleware).forRoutes('{*path}');
  }
}
