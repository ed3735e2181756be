import { createHash } from 'node:crypto';

/** What makes two `POST /orders` bodies "the same" for an Idempotency-Key: the validated fields. */
export function createRequestHash(input: { userId: string; amountCents: number }): string {
  return createHash('sha256')
    .update(JSON.stringify([input.userId, input.amountCents]))
    .digest('hex');
}
