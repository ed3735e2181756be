import { Inject, Injectable, Logger, type Type } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import {
  CLOCK,
  DelayedTaskHandler,
  TaskOutcome,
  type Clock,
  type HandlerOptions,
  type TaskContext,
} from 'nest-delay';
import { OrderEventsPublisher } from './order-events.publisher.js';
import { UUID_PATTERN } from './order-id.js';
import type { Order } from './order.entity.js';
import { applyTransition, lockOrder } from './order.store.js';
import { AUTO_REVIEW_TASK, CLOSE_UNPAID_TASK, type OrderTaskPayload } from './order-tasks.js';
import * as rules from './order-transitions.js';

/**
 * How many of each order task may run at once across every instance: a
 * shared limit each handler declares (null: none). From ORDER_CLOSE_CONCURRENCY
 * and ORDER_AUTO_REVIEW_CONCURRENCY; the README says why 4 and 2.
 */
export interface OrderTaskLimits {
  closeConcurrency: number | null;
  autoReviewConcurrency: number | null;
}

const withConcurrency = (concurrency: number | null): HandlerOptions =>
  concurrency === null ? {} : { limit: { concurrency } };

/**
 * The system's side of the lifecycle. Each handler runs in the delayed task's
 * claim transaction and writes only through its `manager`, so the order's
 * change commits together with the task's executed_at: exactly once. The
 * order is locked and the rule checked again: a user who paid or reviewed
 * first makes the task a no-op.
 *
 * Each runs in a claim transaction, which holds one of the pool's
 * connections: the concurrency limits keep a burst of expirations (a sale's
 * thousands of unpaid orders timing out in the same minute) from holding
 * every connection the HTTP side needs. Made per app, as the purge is,
 * because a decorator's arguments are fixed where the class is declared
 * and the limits are configuration.
 */
export function orderTaskHandlers(limits: OrderTaskLimits): Type<unknown> {
  @Injectable()
  class OrderTaskHandlers {
    private readonly logger = new Logger('OrderTaskHandlers');

    constructor(
      @Inject(CLOCK) private readonly clock: Clock,
      private readonly events: OrderEventsPublisher,
    ) {}

    @DelayedTaskHandler(CLOSE_UNPAID_TASK, withConcurrency(limits.closeConcurrency))
    closeUnpaid(
      payload: OrderTaskPayload,
      { manager }: TaskContext<OrderTaskPayload>,
    ): Promise<TaskOutcome | void> {
      return this.step(payload, manager, rules.closeUnpaid);
    }

    @DelayedTaskHandler(AUTO_REVIEW_TASK, withConcurrency(limits.autoReviewConcurrency))
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
    ): Promise<TaskOutcome | void> {
      const orderId = payload?.orderId;
      // No retry can fix a malformed payload: dead-letter it at once, saying why.
      if (typeof orderId !== 'string' || !UUID_PATTERN.test(orderId)) {
        return TaskOutcome.discard(
          `payload.orderId must be a UUID; got ${JSON.stringify(payload)}`,
        );
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
      // Emitted when the claim transaction commits.
      this.events.publish(manager, { orderId, ...transition.event, at: now });
    }
  }
  return OrderTaskHandlers;
}
