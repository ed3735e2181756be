import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { Actor, OrderEventType } from './order-status.js';

/** One state change of an order, appended in the transaction that made it. */
@Entity({ name: 'order_event' })
export class OrderEvent {
  /** bigserial: a string, so it never loses precision. Orders an order's history. */
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  // A plain column rather than a relation: no import cycle between entities under ESM.
  @Column({ name: 'order_id', type: 'uuid' })
  orderId!: string;

  @Column({ type: 'text' })
  type!: OrderEventType;

  @Column({ type: 'text' })
  actor!: Actor;

  @Column({ type: 'jsonb' })
  data!: Record<string, unknown>;

  @Column({ type: 'timestamptz' })
  at!: Date;
}
