import { SetMetadata } from '@nestjs/common';
import { DELAYED_TASK_HANDLER } from './delay.constants.js';

/**
 * Marks a provider method as the handler of one task type. The method gets
 * `(payload, { task, manager })` and should write through `manager` so its
 * effect commits together with the task's `executed_at`.
 */
export const DelayedTaskHandler = (type: string): MethodDecorator =>
  SetMetadata(DELAYED_TASK_HANDLER, type);
