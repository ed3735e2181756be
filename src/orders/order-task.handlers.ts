import { Inject, Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import {
  CLOCK,
  DelayedTaskHandler,
  DelayService,
  TaskOutcome,
  type Clock,
  type TaskContext,
} from 'nest-delay';
import { OrderEventsPublisher } from './order-events.publisher.js';
import { UUID_PATTERN } from './order-id.js';
import type { Order } from './order.entity.js';
import { applyTransition, lockOrder } from './order.store.js';
import {
  AutoReview,
  CloseUnpaid,
  NotifyClosed,
  notifyClosedKey,
  orderEntity,
  type OrderTaskPayload,
} from './order-tasks.js';
import * as rules from './order-transitions.js';

/**
 * The system's side of the lifecycle. Each handler runs in the delayed task's
 * claim transaction and writes only through its `manager`, so the order's
 * change commits together with the task's executed_at: exactly once. The
 * order is locked and the rule checked again: a user who paid or reviewed
 * first makes the task a no-op.
 *
 * No shared limit: a close or an auto-review writes rows in our own
 * database, and what protects its pool is each instance's `concurrency`
 * (DELAY_CONCURRENCY, below DB_POOL_SIZE). A cluster-wide cap would only
 * make a burst of expirations late, however many instances run (docs/orders-api.md,
 * "Limits on the order tasks"). Shared limits are for calls to other
 * services: the notification (order-notification.handler.ts).
 */
@Injectable()
export class OrderTaskHandlers {
  private readonly logger = new Logger('OrderTaskHandlers');

  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly delay: DelayService,
    private readonly events: OrderEventsPublisher,
  ) {}

  /** Closes the order if still unpaid, and schedules the customer's notification with the close. */
  @DelayedTaskHandler(CloseUnpaid)
  closeUnpaid(
    payload: OrderTaskPayload,
    { manager }: TaskContext<OrderTaskPayload>,
  ): Promise<TaskOutcome | void> {
    return this.step(payload, manager, rules.closeUnpaid, (orderId, now) =>
      // In the close's transaction: the notification exists if and only if the close committed.
      this.delay.schedule(
        NotifyClosed.with(
          { orderId },
          { key: notifyClosedKey(orderId), entity: orderEntity(orderId), runAt: now },
        ),
        { manager },
      ),
    );
  }

  @DelayedTaskHandler(AutoReview)
  autoReview(
    payload: OrderTaskPayload,
    { manager }: TaskContext<OrderTaskPayload>,
  ): Promise<TaskOutcome | void> {
    return this.step(payload, manager, rules.autoReview);
  }

  private async step(
    payload: OrderTaskPayload,
    manager: EntityManager,
    decide: (order: Order, now: Date) => rules.Transition | undefined,
    afterChange?: (orderId: string, now: Date) => Promise<unknown>,
  ): Promise<TaskOutcome | void> {
    const orderId = payload?.orderId;
    // No retry can fix a malformed payload: dead-letter it at once, saying why.
    if (typeof orderId !== 'string' || !UUID_PATTERN.test(orderId)) {
      return TaskOutcome.discard(`payload.orderId must be a UUID; got ${JSON.stringify(payload)}`);
    }
    const order = await lockOrder(manager, orderId);
    if (!order) {
      this.logger.warn(`Order ${orderId} not found; nothing to do`);
      return;
    }
    const now = new Date(this.clock.now());
    const transition = decide(order, now);
    if (!transition) return;
    await applyTransition(manager, order, transition, now);
    await afterChange?.(orderId, now);
    // Emitted when the claim transaction commits.
    this.events.publish(manager, { orderId, ...transition.event, at: now });
  }
}
