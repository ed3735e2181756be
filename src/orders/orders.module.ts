import { Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { idempotencyKeyPurge } from './idempotency-key-purge.js';
import { OrderEvent } from './order-event.entity.js';
import { OrderIdempotencyKey } from './order-idempotency-key.entity.js';
import { OrderTaskHandlers } from './order-task.handlers.js';
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
  providers: [OrdersService, OrderTaskHandlers, OrderEventsPublisher],
})
export class OrdersModule {
  /**
   * With the purge of expired Idempotency-Keys every `purgeEveryMs`; null
   * leaves it out, and the engine then removes its schedule at boot.
   */
  static register({ purgeEveryMs }: { purgeEveryMs: number | null }): DynamicModule {
    return {
      module: OrdersModule,
      providers: purgeEveryMs === null ? [] : [idempotencyKeyPurge(purgeEveryMs)],
    };
  }
}
