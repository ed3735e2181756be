import {
  Inject,
  Injectable,
  Logger,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { AfterCommit } from 'nest-delay';
import { DataSource, type EntityManager } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/app-config.token.js';
import { orderEventName, type OrderDomainEvent } from './order-events.js';

/**
 * Emits an order's domain event on EventEmitter2 once the transaction that
 * wrote it commits (a request's, or a delayed task's claim), never if it
 * rolls back. A listener that throws is logged here and goes no further: the
 * change is committed already, the request or the task is not its business.
 */
@Injectable()
export class OrderEventsPublisher implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('OrderEvents');
  private readonly afterCommit: AfterCommit;

  constructor(
    dataSource: DataSource,
    private readonly events: EventEmitter2,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.afterCommit = new AfterCommit(dataSource);
  }

  onModuleInit(): void {
    if (this.config.eventsEnabled) this.afterCommit.attach();
  }

  onModuleDestroy(): void {
    this.afterCommit.detach();
  }

  publish(manager: EntityManager, event: OrderDomainEvent): void {
    if (!this.config.eventsEnabled) return;
    this.afterCommit.run(manager, () => {
      try {
        this.events.emit(orderEventName(event.type), event);
      } catch (error) {
        this.logger.error(
          `A listener of ${orderEventName(event.type)} for order ${event.orderId} threw, ignored: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    });
  }
}
