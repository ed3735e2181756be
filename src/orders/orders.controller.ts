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
  UseGuards,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBearerAuth,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { CurrentCaller, type Caller } from '../auth/caller.js';
import { UserAuthGuard } from '../auth/user-auth.guard.js';
import type { AppConfig } from '../config/app-config.js';
import { APP_CONFIG } from '../config/app-config.token.js';
import { checkListedUser, idempotencyKeyOwner, ownerOfNewOrder, scopeOf } from './caller-scope.js';
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
 * The REST contract: JSON in and out, 401 without a valid bearer token, 400
 * for input out of contract, 404 for an unknown id or another user's order,
 * 409 for a transition the order's state does not allow.
 */
@ApiTags('orders')
@ApiBearerAuth('user')
@UseGuards(UserAuthGuard)
@ApiUnauthorizedResponse({
  type: ErrorSchema,
  description: 'No bearer token, or one that does not verify (WWW-Authenticate says why)',
})
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
  @ApiForbiddenResponse({
    type: ErrorSchema,
    description: "userId is not the token's user, and the token has no admin role",
  })
  async create(
    @CurrentCaller() caller: Caller,
    @Body() body: CreateOrderDto,
    @Headers(IDEMPOTENCY_KEY_HEADER) idempotencyKey: string | undefined,
  ): Promise<OrderView> {
    const key = parseIdempotencyKey(idempotencyKey);
    const userId = ownerOfNewOrder(caller, body.userId);
    const order = await this.orders.create(
      { userId, amountCents: body.amountCents },
      key === undefined ? undefined : { key, userId: idempotencyKeyOwner(caller, userId) },
    );
    return this.toOrderView(order);
  }

  @Get()
  @ApiOperation({
    summary: "Orders, newest first, a page at a time: the token's user's own (an admin's: all)",
  })
  @ApiOkResponse({ type: OrderPageSchema })
  @ApiForbiddenResponse({
    type: ErrorSchema,
    description: "userId is not the token's user, and the token has no admin role",
  })
  async list(
    @CurrentCaller() caller: Caller,
    @Query() query: ListOrdersQuery,
  ): Promise<OrderPageView> {
    checkListedUser(caller, query.userId);
    const page = await this.orders.list(query, scopeOf(caller));
    return { items: page.items.map(this.toOrderView), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One order' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order of yours has this id' })
  @ApiOkResponse({ type: OrderSchema })
  async get(
    @CurrentCaller() caller: Caller,
    @Param('id', OrderIdPipe) id: string,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.get(id, scopeOf(caller)));
  }

  @Get(':id/history')
  @ApiOperation({ summary: "The order's state changes, oldest first, by the user or the system" })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order of yours has this id' })
  @ApiOkResponse({ type: [OrderEventSchema] })
  async history(
    @CurrentCaller() caller: Caller,
    @Param('id', OrderIdPipe) id: string,
  ): Promise<OrderEventView[]> {
    return (await this.orders.history(id, scopeOf(caller))).map(toOrderEventView);
  }

  @Post(':id/pay')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Pay a PENDING_PAYMENT order' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order of yours has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: "The order's state does not allow it" })
  async pay(
    @CurrentCaller() caller: Caller,
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.pay(id, scopeOf(caller)));
  }

  @Post(':id/cancel')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Cancel a PENDING_PAYMENT order (closed, USER_CANCELLED)' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order of yours has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: "The order's state does not allow it" })
  async cancel(
    @CurrentCaller() caller: Caller,
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.cancel(id, scopeOf(caller)));
  }

  @Post(':id/finish')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary:
      'Finish a PAID order; it is reviewed 5 stars automatically after the auto-review delay',
  })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order of yours has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: "The order's state does not allow it" })
  async finish(
    @CurrentCaller() caller: Caller,
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.finish(id, scopeOf(caller)));
  }

  @Post(':id/refund')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    summary:
      'Refund a PAID or FINISHED order; every task it has waiting (close, review, notification) is cancelled with it',
  })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order of yours has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: "The order's state does not allow it" })
  async refund(
    @CurrentCaller() caller: Caller,
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return this.toOrderView(await this.orders.refund(id, scopeOf(caller)));
  }

  @Post(':id/review')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({ summary: 'Review a FINISHED order once, 1 to 5 stars' })
  @ApiParam({ name: 'id', format: 'uuid' })
  @ApiNotFoundResponse({ type: ErrorSchema, description: 'No order of yours has this id' })
  @ApiOkResponse({ type: OrderSchema })
  @ApiConflictResponse({ type: ErrorSchema, description: 'Not FINISHED, or already reviewed' })
  async review(
    @CurrentCaller() caller: Caller,
    @Param('id', OrderIdPipe) id: string,
    @Body() body: ReviewOrderDto,
  ): Promise<OrderView> {
    const scope = scopeOf(caller);
    return this.toOrderView(await this.orders.review(id, scope, body.stars, body.comment ?? null));
  }
}
