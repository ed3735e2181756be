import { NotFoundException } from '@nestjs/common';
import { orderNotFound } from '../orders.messages.js';

export class OrderNotFoundError extends NotFoundException {
  constructor(readonly orderId: string) {
    super(orderNotFound(orderId));
  }
}
