// The public surface of the delay module: other modules import only this file.
export { DelayModule } from './delay.module.js';
export { DelayService } from './delay.service.js';
export { DelayedTaskHandler } from './delayed-task-handler.decorator.js';
export type { DelayModuleOptions, RetryPolicy } from './delay.options.js';
export type {
  DelayedTask,
  JsonValue,
  ScheduleRequest,
  TaskContext,
  TaskRef,
  TaskState,
  TransactionOptions,
} from './task.types.js';
export { DelayValidationError } from './errors/delay-validation.error.js';
export { DuplicateHandlerError } from './errors/duplicate-handler.error.js';
export { UnknownTaskTypeError } from './errors/unknown-task-type.error.js';
export { TaskNotFoundError } from './errors/task-not-found.error.js';
export { CLOCK, ManualClock, SystemClock, type Clock } from './clock/index.js';
export { parseDuration, tryParseDuration, type Duration } from './duration.js';
export { TimingWheel, type TimingWheelOptions, type DueEntry } from './wheel/index.js';
export { delayMigrations } from './migrations/index.js';
