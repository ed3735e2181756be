import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource, type EntityManager } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/app-config.token.js';
import { isTransientConflict } from '../database/postgres-errors.js';
import {
  CLOCK,
  DelayService,
  TaskNotFoundError,
  TaskStateError,
  type Clock,
  type TaskDefinition,
} from 'nest-delay';
import { createRequestHash } from './create-request-hash.js';
import { IdempotencyKeyReusedError } from './errors/idempotency-key-reused.error.js';
import { IDEMPOTENCY_KEY_TTL_MS } from './idempotency-keys.js';
import { OrderNotFoundError } from './errors/order-not-found.error.js';
import { decodeCursor, encodeCursor } from './order-cursor.js';
import { OrderEvent } from './order-event.entity.js';
import { OrderEventsPublisher } from './order-events.publisher.js';
import type { OrderStatus } from './order-status.js';
import { appendEvent, applyTransition, claimIdempotencyKey, lockOrder } from './order.store.js';
import {
  AutoReview,
  autoReviewKey,
  CloseUnpaid,
  closeUnpaidKey,
  orderEntity,
  type OrderTaskPayload,
} from './order-tasks.js';
import * as rules from './order-transitions.js';
import { Order } from './order.entity.js';
import { inScope, type OrderScope } from './order-scope.js';

export interface NewOrder {
  userId: string;
  amountCents: number;
}

export interface OrderFilter {
  status?: OrderStatus;
  userId?: string;
  limit?: number;
  cursor?: string;
}

export const DEFAULT_PAGE_SIZE = 20;
/** A deadlock or serialization failure rolls everything back; running it again is safe. */
const MAX_TRANSACTION_ATTEMPTS = 3;

/**
 * The order lifecycle. Every change locks the order row, checks the rule,
 * writes the change, its `order_event` row and the delayed task it schedules
 * or cancels, all in one transaction: a rejected request changes nothing.
 */
@Injectable()
export class OrdersService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly delay: DelayService,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly events: OrderEventsPublisher,
  ) {}

  /**
   * With an Idempotency-Key, the first request with the key creates the order;
   * a later one with the same body gets that order back (as it is now), one
   * with another body a 409. A key holds for 24 hours; after that it creates
   * a new order. Keys are per user (`idempotency.userId`, who sent the
   * request): another user's same key is another key.
   */
  create(input: NewOrder, idempotency?: { key: string; userId: string }): Promise<Order> {
    return this.transaction(async (manager) => {
      const now = new Date(this.clock.now());
      const id = randomUUID();
      if (idempotency !== undefined) {
        const earlier = await this.earlierOrderFor(manager, idempotency, input, id, now);
        if (earlier) return earlier;
      }
      const deadline = new Date(now.getTime() + this.config.orderPaymentTimeoutMs);
      const { order, event } = rules.create(id, input, now, deadline);
      await manager.insert(Order, order);
      await appendEvent(manager, id, event, now);
      this.events.publish(manager, { orderId: id, ...event, at: now });
      await this.scheduleStep(manager, CloseUnpaid, closeUnpaidKey(id), id, deadline);
      return order;
    });
  }

  /** The order, if `scope` sees it; 404 otherwise, as for an id nobody has. */
  async get(id: string, scope: OrderScope): Promise<Order> {
    const order = await this.dataSource.manager.findOneBy(Order, { id });
    if (!order || !inScope(order, scope)) throw new OrderNotFoundError(id);
    return order;
  }

  /** Newest first, by (createdAt, id); the cursor is where the previous page ended. Only `scope`'s orders. */
  async list(
    filter: OrderFilter,
    scope: OrderScope,
  ): Promise<{ items: Order[]; nextCursor: string | null }> {
    const limit = filter.limit ?? DEFAULT_PAGE_SIZE;
    const query = this.dataSource.manager.createQueryBuilder(Order, 'o');
    if (scope.kind === 'user') query.andWhere('o.userId = :owner', { owner: scope.userId });
    if (filter.status !== undefined)
      query.andWhere('o.status = :status', { status: filter.status });
    if (filter.userId !== undefined)
      query.andWhere('o.userId = :userId', { userId: filter.userId });
    if (filter.cursor !== undefined) {
      const after = decodeCursor(filter.cursor);
      query.andWhere('(o.createdAt, o.id) < (:afterCreatedAt, :afterId)', {
        afterCreatedAt: after.createdAt,
        afterId: after.id,
      });
    }
    // One row more than asked tells whether there is a next page.
    const rows = await query
      .orderBy('o.createdAt', 'DESC')
      .addOrderBy('o.id', 'DESC')
      .limit(limit + 1)
      .getMany();
    const items = rows.slice(0, limit);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit && last ? encodeCursor(last) : null };
  }

  async history(id: string, scope: OrderScope): Promise<OrderEvent[]> {
    await this.get(id, scope);
    return this.dataSource.manager.find(OrderEvent, {
      where: { orderId: id },
      order: { id: 'ASC' },
    });
  }

  pay(id: string, scope: OrderScope): Promise<Order> {
    return this.transition(id, scope, closeUnpaidKey(id), rules.pay);
  }

  cancel(id: string, scope: OrderScope): Promise<Order> {
    return this.transition(id, scope, closeUnpaidKey(id), rules.cancelByUser);
  }

  finish(id: string, scope: OrderScope): Promise<Order> {
    const delayMs = this.config.orderAutoReviewDelayMs;
    return this.transition(
      id,
      scope,
      undefined,
      (order, now) => rules.finish(order, now, new Date(now.getTime() + delayMs)),
      (order, manager) =>
        this.scheduleStep(manager, AutoReview, autoReviewKey(id), id, order.autoReviewAt!),
    );
  }

  review(id: string, scope: OrderScope, stars: number, comment: string | null): Promise<Order> {
    return this.transition(id, scope, autoReviewKey(id), (order, now) =>
      rules.review(order, now, stars, comment),
    );
  }

  /**
   * Refunds a paid or finished order. Every task the order still has waiting
   * (its close, its review, a notification: whatever its key) is cancelled by
   * its entity in the same transaction, before the order is locked (the lock
   * order of `transition`) and again once it is: a finish that held the lock
   * meanwhile may have committed a review task; if the rule says no, the
   * rollback brings them all back.
   */
  refund(id: string, scope: OrderScope): Promise<Order> {
    return this.transaction(async (manager) => {
      await this.assertInScope(manager, id, scope);
      const before = await this.delay.cancelEntity(orderEntity(id), { manager });
      const order = await lockOrder(manager, id);
      if (!order || !inScope(order, scope)) throw new OrderNotFoundError(id);
      const after = await this.delay.cancelEntity(orderEntity(id), { manager });
      const dropped = { ids: [...before.ids, ...after.ids] };
      const now = new Date(this.clock.now());
      const transition = rules.refund(order, now, dropped.ids.length);
      await applyTransition(manager, order, transition, now);
      this.events.publish(manager, { orderId: id, ...transition.event, at: now });
      return order;
    });
  }

  /**
   * One user transition. The pending task it makes moot is cancelled before
   * the order is locked: the claim transaction of a firing task locks the task
   * row and then (in the handler) the order, so taking the two locks in the
   * same order makes a racing user action wait instead of deadlock. It is
   * cancelled again once the order is locked: the transaction that held the
   * lock meanwhile (a finish) may have committed it then. If the rule says
   * no, the rollback undoes both cancels. An order outside `scope` is a 404
   * before any of it: another user's tasks are not even locked.
   */
  private transition(
    id: string,
    scope: OrderScope,
    taskToCancel: string | undefined,
    decide: (order: Order, now: Date) => rules.Transition,
    afterwards?: (order: Order, manager: EntityManager) => Promise<unknown>,
  ): Promise<Order> {
    return this.transaction(async (manager) => {
      await this.assertInScope(manager, id, scope);
      if (taskToCancel !== undefined) await this.cancelIfPending(taskToCancel, manager);
      const order = await lockOrder(manager, id);
      if (!order || !inScope(order, scope)) throw new OrderNotFoundError(id);
      if (taskToCancel !== undefined) await this.cancelIfPending(taskToCancel, manager);
      const now = new Date(this.clock.now());
      const transition = decide(order, now);
      await applyTransition(manager, order, transition, now);
      this.events.publish(manager, { orderId: id, ...transition.event, at: now });
      await afterwards?.(order, manager);
      return order;
    });
  }

  /**
   * A user's order is theirs for good (user_id never changes), so this
   * unlocked read is as good as a check under the lock, and it comes before
   * the transaction touches the order's tasks.
   */
  private async assertInScope(manager: EntityManager, id: string, scope: OrderScope) {
    if (scope.kind === 'all') return;
    if (!(await manager.existsBy(Order, { id, userId: scope.userId })))
      throw new OrderNotFoundError(id);
  }

  /**
   * The task may have run already (then the rule below answers 409) or never
   * exist (an unknown order: 404 below); only a pending one is cancelled.
   */
  private async cancelIfPending(key: string, manager: EntityManager): Promise<void> {
    try {
      await this.delay.cancel({ key }, { manager });
    } catch (error) {
      if (!(error instanceof TaskStateError || error instanceof TaskNotFoundError)) throw error;
    }
  }

  /** The order an earlier request with this key created, or undefined when this request claimed the key. */
  private async earlierOrderFor(
    manager: EntityManager,
    { key, userId }: { key: string; userId: string },
    input: NewOrder,
    orderId: string,
    now: Date,
  ): Promise<Order | undefined> {
    const requestHash = createRequestHash(input);
    const earlier = await claimIdempotencyKey(manager, {
      userId,
      key,
      requestHash,
      orderId,
      at: now,
      expiredBefore: new Date(now.getTime() - IDEMPOTENCY_KEY_TTL_MS),
    });
    if (!earlier) return undefined;
    if (earlier.requestHash !== requestHash) throw new IdempotencyKeyReusedError(key);
    return manager.findOneByOrFail(Order, { id: earlier.orderId });
  }

  /** Schedules an order's delayed step in the caller's transaction: it exists only if that commits. */
  private scheduleStep(
    manager: EntityManager,
    task: TaskDefinition<OrderTaskPayload>,
    key: string,
    orderId: string,
    runAt: Date,
  ) {
    return this.delay.schedule(
      task.with({ orderId }, { key, entity: orderEntity(orderId), runAt }),
      { manager },
    );
  }

  private async transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.dataSource.transaction(work);
      } catch (error) {
        if (attempt >= MAX_TRANSACTION_ATTEMPTS || !isTransientConflict(error)) throw error;
      }
    }
  }
}
