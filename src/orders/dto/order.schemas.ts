import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  CLOSE_REASONS,
  ORDER_EVENT_TYPES,
  ORDER_STATUSES,
  REVIEW_STATUSES,
} from '../order-status.js';
import type { OrderEventView, OrderLinksView, OrderPageView, OrderView } from '../order.view.js';

/*
 * The response shapes for OpenAPI only: the controllers return the plain
 * views of order.view.ts, which these classes mirror field for field
 * (`implements` keeps them in step at compile time).
 */

const AT = '2026-11-23T10:00:00.000Z';

const ORDER_ID = '3f0b8a52-5c1e-4d5b-9a8e-0b1c2d3e4f50';

export class OrderLinksSchema implements OrderLinksView {
  @ApiProperty({ example: `/orders/${ORDER_ID}/history` })
  history!: string;
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: `/admin/api/entities/order:${ORDER_ID}/timeline`,
    description:
      "The timeline of the order's delayed tasks (admin token needed); null when the admin API is off (no ADMIN_TOKEN)",
  })
  timeline!: string | null;
  @ApiProperty({
    type: 'string',
    nullable: true,
    example: `/admin#/timeline?entity=order:${ORDER_ID}`,
    description: 'The live admin page opened on that timeline; null when the admin API is off',
  })
  timelinePage!: string | null;
}

export class OrderSchema implements OrderView {
  @ApiProperty({ format: 'uuid', example: ORDER_ID })
  id!: string;
  @ApiProperty({ example: 'user-42' })
  userId!: string;
  @ApiProperty({ example: 1999, description: 'Amount in cents' })
  amountCents!: number;
  @ApiProperty({ enum: ORDER_STATUSES, example: 'PENDING_PAYMENT' })
  status!: OrderView['status'];
  @ApiProperty({ enum: CLOSE_REASONS, nullable: true, example: null })
  closeReason!: OrderView['closeReason'];
  @ApiProperty({ enum: REVIEW_STATUSES, example: 'NONE' })
  reviewStatus!: OrderView['reviewStatus'];
  @ApiProperty({ type: 'integer', nullable: true, minimum: 1, maximum: 5, example: null })
  stars!: number | null;
  @ApiProperty({ type: 'string', nullable: true, example: null })
  comment!: string | null;
  @ApiProperty({ format: 'date-time', example: AT })
  createdAt!: string;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null })
  paidAt!: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null })
  finishedAt!: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null })
  closedAt!: string | null;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null })
  reviewedAt!: string | null;
  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: '2026-11-23T10:30:00.000Z',
    description: 'An unpaid order closes itself then',
  })
  paymentDeadline!: string | null;
  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'A finished, unreviewed order is reviewed 5 stars then',
  })
  autoReviewAt!: string | null;
  @ApiProperty({ type: OrderLinksSchema })
  links!: OrderLinksSchema;
}

export class OrderPageSchema implements OrderPageView {
  @ApiProperty({ type: [OrderSchema] })
  items!: OrderSchema[];
  @ApiProperty({
    type: 'string',
    nullable: true,
    description: 'Pass as `cursor` for the next page; null on the last one',
    example: null,
  })
  nextCursor!: string | null;
}

export class OrderEventSchema implements OrderEventView {
  @ApiProperty({ enum: ORDER_EVENT_TYPES, example: 'CLOSED' })
  type!: OrderEventView['type'];
  @ApiProperty({ format: 'date-time', example: AT })
  at!: string;
  @ApiProperty({ enum: ['user', 'system'], example: 'system' })
  by!: OrderEventView['by'];
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { reason: 'PAYMENT_TIMEOUT' },
  })
  data!: Record<string, unknown>;
}

/** Every error: Nest's body, with a message that names the field, the id or the state. */
export class ErrorSchema {
  @ApiProperty({ example: 409 })
  statusCode!: number;
  @ApiProperty({
    oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    example:
      'Order 3f0b8a52-5c1e-4d5b-9a8e-0b1c2d3e4f50 is CLOSED: only a PENDING_PAYMENT order can be paid',
  })
  message!: string | string[];
  @ApiPropertyOptional({ example: 'Conflict' })
  error?: string;
}
