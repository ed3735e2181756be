import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The Idempotency-Key of a `POST /orders`, the hash of its body and the order
 * it created; unique per user (who sent it), so one user's key is not another's.
 */
@Entity({ name: 'user_idempotency_key' })
export class OrderIdempotencyKey {
  @PrimaryColumn({ name: 'user_id', type: 'text' })
  userId!: string;

  @PrimaryColumn({ type: 'text' })
  key!: string;

  @Column({ name: 'request_hash', type: 'text' })
  requestHash!: string;

  @Column({ name: 'order_id', type: 'uuid' })
  orderId!: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
