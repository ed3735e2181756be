import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  HttpStatus,
  Param,
  Post,
  Query,
} from '@nestjs/common';
import { CreateOrderDto } from './dto/create-order.dto.js';
import { IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey } from './dto/idempotency-key.js';
import { ListOrdersQuery } from './dto/list-orders.query.js';
import { NoBodyPipe } from './dto/no-body.pipe.js';
import { OrderIdPipe } from './dto/order-id.pipe.js';
import { ReviewOrderDto } from './dto/review-order.dto.js';
import { OrdersService } from './orders.service.js';
import {
  toOrderEventView,
  toOrderView,
  type OrderEventView,
  type OrderPageView,
  type OrderView,
} from './order.view.js';

/**
 * The REST contract: JSON in and out, 400 for input out of contract, 404 for
 * an unknown id, 409 for a transition the order's state does not allow.
 */
@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post()
  async create(
    @Body() body: CreateOrderDto,
    @Headers(IDEMPOTENCY_KEY_HEADER) idempotencyKey: string | undefined,
  ): Promise<OrderView> {
    return toOrderView(await this.orders.create(body, parseIdempotencyKey(idempotencyKey)));
  }

  @Get()
  async list(@Query() query: ListOrdersQuery): Promise<OrderPageView> {
    const page = await this.orders.list(query);
    return { items: page.items.map(toOrderView), nextCursor: page.nextCursor };
  }

  @Get(':id')
  async get(@Param('id', OrderIdPipe) id: string): Promise<OrderView> {
    return toOrderView(await this.orders.get(id));
  }

  @Get(':id/history')
  async history(@Param('id', OrderIdPipe) id: string): Promise<OrderEventView[]> {
    return (await this.orders.history(id)).map(toOrderEventView);
  }

  @Post(':id/pay')
  @HttpCode(HttpStatus.OK)
  async pay(
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return toOrderView(await this.orders.pay(id));
  }

  @Post(':id/cancel')
  @HttpCode(HttpStatus.OK)
  async cancel(
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return toOrderView(await this.orders.cancel(id));
  }

  @Post(':id/finish')
  @HttpCode(HttpStatus.OK)
  async finish(
    @Param('id', OrderIdPipe) id: string,
    @Body(NoBodyPipe) _body: undefined,
  ): Promise<OrderView> {
    return toOrderView(await this.orders.finish(id));
  }

  @Post(':id/review')
  @HttpCode(HttpStatus.OK)
  async review(
    @Param('id', OrderIdPipe) id: string,
    @Body() body: ReviewOrderDto,
  ): Promise<OrderView> {
    return toOrderView(await this.orders.review(id, body.stars, body.comment ?? null));
  }
}
