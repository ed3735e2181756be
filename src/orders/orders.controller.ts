import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  HttpStatus,
  Inject,
  Param,
  Post,
  Query,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/app-config.token.js';
import { CreateOrderDto } from './dto/create-order.dto.js';
import {
  ErrorSchema,
  OrderEventSchema,
  OrderPageSchema,
  OrderSchema,
} from './dto/order.schemas.js';
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey } from './dto/idempotency-key.js';
import { ListOrdersQuery } from './dto/list-orders.query.js';
import { NoBodyPipe } from './dto/no-body.pipe.js';
import { OrderIdPipe } from './dto/order-id.pipe.js';
import { ReviewOrderDto } from './dto/review-order.dto.js';
import type { Order } from './order.entity.js';
import { OrdersService } from './orders.service.js';
import {
  toOrderEventView,
  toOrderView as orderView,
  type OrderEventView,
  type OrderPageView,
  type OrderView,
} from './order.view.js';

/**
 * The REST contract: JSON in and out, 400 for input out of contract, 404 for
 * an unknown id, 409 for a transition the order's state does not allow.
 */
@ApiTags('orders')
@ApiBadRequestResponse({
  type: ErrorSchema,
  description: 'Input out of contract; the message names the field',
})
@ApiServiceUnavailableResponse({
  type: ErrorSchema,
  description: 'The database is busy or unreachable; retry (Retry-After)',
})
@Controller('orders')
export class OrdersController {
  /** Whether the admin API is mounted: the orders then link to their timelines. */
  private readonly admin: boolean;

  constructor(
    private readonly orders: OrdersService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.admin = config.adminToken !== undefined;
  }

  private readonly toOrderView = (order: Order): OrderView => orderView(order, this.admin);

  @Post()
  @ApiOperation({
    summary: 'Create an order, pending payment; it closes itself if unpaid by its paymentDeadline',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Same key and body: the same order back; same key, another body: 409',
  })
  @ApiCreatedResponse({ type: OrderSchema })
  @ApiConflictResponse({
    type: ErrorSchema,
    description: 'Idempotency-Key reused with another body',
  })
  async create(
    @Body() body: CreateOrderDto,
    @Headers(IDEMPOTENCY_KEY_HEADER) idempotencyKey: string | undefined,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.create(body, parseIdempotencyKey(idempotencyKey)));
  }

  @Get()
  @ApiOperation({ summary: 'Orders, newest first, a page at a time' })
  @ApiOkResponse({ type: OrderPageSchema })
  async list(@Query() query: ListOrdersQuery): Promise<OrderPageView> {
    const page = await this.orders.list(query);
    return { items: page.items.map(this.toOrderView), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One order' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order has this id' })
  @ApiOkResponse({ type: OrderSchema })
  async get(@Param('id', OrderIdPipe) id: string): Promise<OrderView> {
    return this.toOrderView(await this.orders.get(id));
  }

  @Get(':id/history')
  @ApiOperation({ summary: "The order's state changes, oldest first, by the user or the system" })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order has this id' })
  @ApiOkResponse({ type: [OrderEventSchema] })
  async history(@Param('id', OrderIdPipe) id: string): Promise<OrderEventView[]> {
    return (await this.orders.history(id)).map(toOrderEventView);
  }

  @Post(':id/pay')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Pay a PENDING_PAYMENT order' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: "The order's state does not allow it" })
  async pay(
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.pay(id));
  }

  @Post(':id/cancel')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Cancel a PENDING_PAYMENT order (closed, USER_CANCELLED)' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: "The order's state does not allow it" })
  async cancel(
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.cancel(id));
  }

  @Post(':id/finish')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary:
      'Finish a PAID order; it is reviewed 5 stars automatically after the auto-review delay',
  })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: "The order's state does not allow it" })
  async finish(
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.finish(id));
  }

  @Post(':id/refund')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary:
      'Refund a PAID or FINISHED order; every task it has waiting (close, review, notification) is cancelled with it',
  })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: "The order's state does not allow it" })
  async refund(
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.refund(id));
  }

  @Post(':id/review')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Review a FINISHED order once, 1 to 5 stars' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: 'Not FINISHED, or already reviewed' })
  async review(
    @Param('id', OrderIdPipe) id: string,
    @Body() body: ReviewOrderDto,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.review(id, body.stars, body.comment ?? null));
  }
}
