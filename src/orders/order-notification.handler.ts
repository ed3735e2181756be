import { Inject, Injectable, type Type } from '@nestjs/common';
import { CLOCK, DelayedTaskHandler, TaskOutcome, type Clock, type TaskContext } from 'nest-delay';
import {
  NOTIFICATION_PROVIDER,
  type CustomerNotification,
  type NotificationProvider,
} from '../notifications/notification-provider.js';
import { OrderEventsPublisher } from './order-events.publisher.js';
import { UUID_PATTERN } from './order-id.js';
import { Order } from './order.entity.js';
import { appendEvent, lockOrder } from './order.store.js';
import { NotifyClosed, notifyClosedKey, type OrderTaskPayload } from './order-tasks.js';
import type { Transition } from './order-transitions.js';

/** How long one send may take before its attempt is aborted and retried. */
const SEND_TIMEOUT = '10s';

function closedUnpaidMessage(order: Order): CustomerNotification {
  const amount = (order.amountCents / 100).toFixed(2);
  return {
    to: order.userId,
    template: 'order-closed-unpaid',
    subject: `Your order ${order.id} was closed`,
    text: `Your order ${order.id} of ${amount} was closed because it was not paid in time.`,
    idempotencyKey: notifyClosedKey(order.id),
  };
}

/**
 * The customer's notification after the payment timeout closed their order:
 * a call to another service, so the shared limit belongs here: at most
 * `ratePerSecond` sends start in any second across every instance, the
 * provider's quota (NOTIFY_RATE_PER_SECOND). A burst of closes lands in
 * time; their notifications queue behind the rate, uncharged.
 *
 * The send happens inside the task's claim transaction, which then appends
 * the CUSTOMER_NOTIFIED event: the event and the task's completion commit
 * together, once. A send that fails throws and the task retries with the
 * engine's backoff. A send that succeeded in a transaction that did not
 * commit is sent again on the retry; the message's idempotency key lets a
 * provider that takes one deliver it once. Made per app, as the purge is,
 * because a decorator's arguments are fixed where the class is declared and
 * the rate is configuration.
 */
export function orderNotificationHandler(ratePerSecond: number): Type<unknown> {
  @Injectable()
  class OrderNotificationHandler {
    constructor(
      @Inject(CLOCK) private readonly clock: Clock,
      @Inject(NOTIFICATION_PROVIDER) private readonly provider: NotificationProvider,
      private readonly events: OrderEventsPublisher,
    ) {}

    @DelayedTaskHandler(NotifyClosed, {
      limit: { rate: { starts: ratePerSecond, per: '1s' } },
      timeout: SEND_TIMEOUT,
    })
    async notifyClosed(
      payload: OrderTaskPayload,
      { manager, signal }: TaskContext<OrderTaskPayload>,
    ): Promise<TaskOutcome | void> {
      const orderId = payload?.orderId;
      if (typeof orderId !== 'string' || !UUID_PATTERN.test(orderId)) {
        return TaskOutcome.discard(
          `payload.orderId must be a UUID; got ${JSON.stringify(payload)}`,
        );
      }
      // Read without the lock: a closed order changes no more, and the send must not hold its row.
      const order = await manager.findOneBy(Order, { id: orderId });
      if (!order || order.status !== 'CLOSED' || order.closeReason !== 'PAYMENT_TIMEOUT') {
        return TaskOutcome.discard(
          `order ${orderId} is ${order ? `${order.status} (${order.closeReason ?? 'no close reason'})` : 'not found'}: only an order closed by PAYMENT_TIMEOUT is notified`,
        );
      }
      const message = closedUnpaidMessage(order);
      const receipt = await this.provider.send(message, signal);
      const now = new Date(this.clock.now());
      const event: Transition['event'] = {
        type: 'CUSTOMER_NOTIFIED',
        actor: 'system',
        data: { template: message.template, messageId: receipt.messageId },
      };
      // The row lock orders this event among the order's others, as every writer does.
      await lockOrder(manager, orderId);
      await appendEvent(manager, orderId, event, now);
      this.events.publish(manager, { orderId, ...event, at: now });
    }
  }
  return OrderNotificationHandler;
}
