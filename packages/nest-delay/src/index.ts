// The public surface of nest-delay. Test helpers live in `nest-delay/testing`.
export { DelayModule } from './delay.module.js';
export type { DelayModuleExtras } from './delay.module-definition.js';
export { DelayService } from './delay.service.js';
export { DelayedTaskHandler } from './delayed-task-handler.decorator.js';
export { TaskOutcome } from './task-outcome.js';
export type {
  DelayModuleOptions,
  HandlerOptions,
  RetentionPolicy,
  RetryPolicy,
} from './delay.options.js';
export type {
  BulkScheduleResult,
  DelayedTask,
  JsonValue,
  RunAt,
  ScheduleRequest,
  TaskContext,
  TaskId,
  TaskRef,
  TaskState,
  TransactionOptions,
} from './task.types.js';
export { DelayValidationError } from './errors/delay-validation.error.js';
export { DuplicateHandlerError } from './errors/duplicate-handler.error.js';
export { UnknownTaskTypeError } from './errors/unknown-task-type.error.js';
export { TaskNotFoundError } from './errors/task-not-found.error.js';
export { TaskStateError } from './errors/task-state.error.js';
export { CLOCK, SystemClock, type Clock, type TimerHandle } from './clock/index.js';
export { parseDuration, tryParseDuration, type Duration } from './duration.js';
export { TimingWheel, type DueEntry, type TimingWheelOptions } from './wheel/index.js';
export { delayMigrations } from './migrations/index.js';
