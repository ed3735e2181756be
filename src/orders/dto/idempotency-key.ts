import { BadRequestException } from '@nestjs/common';
import { invalidIdempotencyKey } from '../orders.messages.js';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** The optional Idempotency-Key header: absent, or 1 to 200 characters. */
export function parseIdempotencyKey(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  if (raw.length < 1 || raw.length > 200)
    throw new BadRequestException(invalidIdempotencyKey(raw.length));
  return raw;
}
