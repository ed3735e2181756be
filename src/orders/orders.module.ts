import { Module, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import type { AuthConfig } from '../config/auth-config.js';
import { idempotencyKeyPurge } from './idempotency-key-purge.js';
import { OrderEvent } from './order-event.entity.js';
import { OrderIdempotencyKey } from './order-idempotency-key.entity.js';
import { NotificationsModule } from '../notifications/notifications.module.js';
import { orderNotificationHandler } from './order-notification.handler.js';
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
  imports: [
    TypeOrmModule.forFeature([Order, OrderEvent, OrderIdempotencyKey]),
    NotificationsModule,
  ],
  controllers: [OrdersController],
  providers: [OrdersService, OrderEventsPublisher, OrderTaskHandlers],
})
export class OrdersModule {
  /**
   * The customer notification's handler, at most `notifyRatePerSecond` sends
   * a second across instances, and the purge of expired Idempotency-Keys
   * every `purgeEveryMs`; null leaves the purge out, and the engine then
   * removes its schedule at boot. `auth` says how the users' tokens are checked.
   */
  static register({
    purgeEveryMs,
    notifyRatePerSecond,
    auth,
  }: {
    purgeEveryMs: number | null;
    notifyRatePerSecond: number;
    auth: AuthConfig;
  }): DynamicModule {
    return {
      module: OrdersModule,
      imports: [AuthModule.register(auth)],
      providers: [
        orderNotificationHandler(notifyRatePerSecond),
        ...(purgeEveryMs === null ? [] : [idempotencyKeyPurge(purgeEveryMs)]),
      ],
    };
  }
}
