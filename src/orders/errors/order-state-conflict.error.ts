import { ConflictException } from '@nestjs/common';

/** The order's current state does not allow the transition; nothing was changed. */
export class OrderStateConflictError extends ConflictException {
  constructor(
    readonly orderId: string,
    message: string,
  ) {
    super(message);
  }
}
