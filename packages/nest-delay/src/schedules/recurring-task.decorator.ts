import { SetMetadata } from '@nestjs/common';
import { RECURRING_TASK } from '../delay.constants.js';
import type { RecurringTaskOptions } from './schedule.types.js';

/** What the decorator leaves on the method for the explorer. */
export interface RecurringMetadata {
  name: string;
  options: RecurringTaskOptions;
}

/**
 * Runs a provider method on a schedule, as `@Cron` does, with a delayed
 * task's guarantees: each occurrence is one task (type = `name`), planned by
 * whichever instance gets to it first and run once across all instances,
 * fired on time to the millisecond, its writes through `context.manager`
 * committed with it; retries, timeout and dead letter as for any task. The
 * method gets `(payload, context)`, with `context.occurrence` (its scheduled
 * time and the one before). Removing the decorator removes the schedule at
 * the next boot.
 *
 *     @RecurringTask('reports.daily', { cron: '0 8 * * *', timeZone: 'Europe/Berlin' })
 *     async dailyReport(_payload: null, { manager, occurrence }: TaskContext) { ... }
 */
export const RecurringTask = (name: string, options: RecurringTaskOptions): MethodDecorator =>
  SetMetadata<string, RecurringMetadata>(RECURRING_TASK, { name, options });
