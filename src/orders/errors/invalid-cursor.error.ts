import { BadRequestException } from '@nestjs/common';
import { invalidCursor } from '../orders.messages.js';

export class InvalidCursorError extends BadRequestException {
  constructor() {
    super(invalidCursor);
  }
}
