import { SetMetadata } from '@nestjs/common';
import { DELAYED_TASK_HANDLER } from './delay.constants.js';
import type { HandlerOptions } from './delay.options.js';
import type { TaskDefinition, TypedHandler } from './task-definition.js';

/** What the decorator leaves on the method for the explorer. */
export interface HandlerMetadata {
  type: string;
  options: HandlerOptions;
}

/**
 * Marks a provider method as the handler of one task type. The method gets
 * `(payload, { task, manager, attempt, instanceId })` and should write
 * through `manager`, so its effect commits together with the task's
 * `executed_at`. It may return a `TaskOutcome` (discard, snooze); throwing
 * fails the attempt, to be retried with backoff. Options are checked at boot.
 */
export function DelayedTaskHandler<P>(
  task: TaskDefinition<P>,
  options?: HandlerOptions,
): <M extends TypedHandler<P>>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<M>,
) => void;
export function DelayedTaskHandler(type: string, options?: HandlerOptions): MethodDecorator;
/**
 * Given a task declared with defineTask, the compiler also checks that the
 * method's payload parameter takes that task's payload.
 */
export function DelayedTaskHandler(
  task: string | TaskDefinition<unknown>,
  options: HandlerOptions = {},
): MethodDecorator {
  const type = typeof task === 'string' ? task : task.type;
  return SetMetadata<string, HandlerMetadata>(DELAYED_TASK_HANDLER, { type, options });
}
