import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';
import { UUID_PATTERN } from '../order-id.js';
import { invalidOrderId } from '../orders.messages.js';

/** `:id` must be a UUID (else a 400 naming it); lower-cased as Postgres returns it. */
@Injectable()
export class OrderIdPipe implements PipeTransform<string, string> {
  transform(value: string): string {
    if (!UUID_PATTERN.test(value)) throw new BadRequestException(invalidOrderId(value));
    return value.toLowerCase();
  }
}
