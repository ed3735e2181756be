import { Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { idempotencyKeyPurge } from './idempotency-key-purge.js';
import { OrderEvent } from './order-event.entity.js';
import { OrderIdempotencyKey } from './order-idempotency-key.entity.js';
import { orderTaskHandlers, type OrderTaskLimits } from './order-task.handlers.js';
import { Order } from './order.entity.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';
import { OrderEventsPublisher } from './order-events.publisher.js';

/**
 * Orders and their delayed steps. Needs the global DelayModule (DelayService,
 * CLOCK) and APP_CONFIG; its handlers are found by DelayModule's explorer.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Order, OrderEvent, OrderIdempotencyKey])],
  controllers: [OrdersController],
  providers: [OrdersService, OrderEventsPublisher],
})
export class OrdersModule {
  /**
   * The order tasks' handlers with their concurrency limits, and the purge
   * of expired Idempotency-Keys every `purgeEveryMs`; null leaves the purge
   * out, and the engine then removes its schedule at boot.
   */
  static register({
    purgeEveryMs,
    taskLimits,
  }: {
    purgeEveryMs: number | null;
    taskLimits: OrderTaskLimits;
  }): DynamicModule {
    return {
      module: OrdersModule,
      providers: [
        orderTaskHandlers(taskLimits),
        ...(purgeEveryMs === null ? [] : [idempotencyKeyPurge(purgeEveryMs)]),
      ],
    };
  }
}
