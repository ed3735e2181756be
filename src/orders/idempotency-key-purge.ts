import { Inject, Injectable, Logger, type Type } from '@nestjs/common';
import { CLOCK, RecurringTask, type Clock, type TaskContext } from 'nest-delay';
import {
  IDEMPOTENCY_KEY_TTL_MS,
  PURGE_BATCH_SIZE,
  PURGE_BATCHES_PER_RUN,
  PURGE_IDEMPOTENCY_KEYS_SCHEDULE,
} from './idempotency-keys.js';
import { purgeIdempotencyKeys } from './order.store.js';

/**
 * The provider that deletes Idempotency-Keys past their 24 hours, every
 * `everyMs` (10 minutes unless ORDER_IDEMPOTENCY_PURGE_EVERY says otherwise:
 * often enough that a bounded run keeps up with a busy shop, and small runs
 * keep the claim transaction short). Made per app because a decorator's
 * arguments are fixed where the class is declared, and the period is
 * configuration. The deletes go through `context.manager`, so they commit
 * with the occurrence, once across instances.
 */
export function idempotencyKeyPurge(everyMs: number): Type<unknown> {
  @Injectable()
  class IdempotencyKeyPurge {
    private readonly logger = new Logger('IdempotencyKeyPurge');

    constructor(@Inject(CLOCK) private readonly clock: Clock) {}

    @RecurringTask(PURGE_IDEMPOTENCY_KEYS_SCHEDULE, { every: everyMs })
    async purge(_payload: unknown, { manager }: TaskContext): Promise<void> {
      const expiredBefore = new Date(this.clock.now() - IDEMPOTENCY_KEY_TTL_MS);
      let deleted = 0;
      for (let batch = 0; batch < PURGE_BATCHES_PER_RUN; batch++) {
        const n = await purgeIdempotencyKeys(manager, expiredBefore, PURGE_BATCH_SIZE);
        deleted += n;
        if (n < PURGE_BATCH_SIZE) return this.report(deleted, false);
      }
      this.report(deleted, true);
    }

    private report(deleted: number, more: boolean): void {
      if (deleted === 0) return;
      this.logger.log(
        `Deleted ${deleted} idempotency key(s) older than 24 h${more ? '; the next run continues' : ''}`,
      );
    }
  }
  return IdempotencyKeyPurge;
}
