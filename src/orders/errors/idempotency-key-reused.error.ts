import { ConflictException } from '@nestjs/common';
import { idempotencyKeyReused } from '../orders.messages.js';

export class IdempotencyKeyReusedError extends ConflictException {
  constructor(readonly key: string) {
    super(idempotencyKeyReused(key));
  }
}
