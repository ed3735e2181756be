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
 * task's guarantees: each occurrence is one task (type = `name`), run once
 * across all instances, its writes through `context.manager` committed with
 * it. `context.occurrence` has its instant and the one before. Removing the
 * decorator removes the schedule at the next boot.
 *
 *     @RecurringTask('reports.daily', { cron: '0 8 * * *', timeZone: 'Europe/Berlin' })
 *     async dailyReport(_payload: null, { manager, occurrence }: TaskContext) { ... }
 */
export const RecurringTask = (name: string, options: RecurringTaskOptions): MethodDecorator =>
  SetMetadata<string, RecurringMetadata>(RECURRING_TASK, { name, options });
