// The public surface of nest-delay: every export here is an API to keep.
// Test helpers live in `nest-delay/testing`; internals in `nest-delay/internal`.
export { DelayModule } from './delay.module.js';
export type { DelayModuleExtras } from './delay.module-definition.js';
export { DelayService } from './delay.service.js';
export { DelaySchedules } from './schedules/delay-schedules.service.js';
export { RecurringTask } from './schedules/recurring-task.decorator.js';
export { DelayLimits, type TypeLimitInfo } from './limits/delay-limits.service.js';
export type { LimitChange, ResolvedLimit, TaskLimit } from './task-limit.js';
export type {
  CatchUp,
  Occurrence,
  RecurringTaskOptions,
  ScheduleDefinition,
  ScheduleInfo,
  ScheduleRule,
} from './schedules/schedule.types.js';
export { DelayAdmin } from './admin/delay-admin.service.js';
export type {
  InstanceInfo,
  RetryDeadResult,
  ReviveDeadResult,
  TaskDetails,
  TaskListFilter,
  TaskPage,
  WheelSnapshot,
} from './admin/admin.types.js';
export type { StateCount, TaskCounts } from './admin/task-counts.js';
export type { EntityTimeline, TimelineEntry } from './admin/entity-timeline.js';
export type { TaskEventName } from './tasks/task-row.js';
export { DelayedTaskHandler } from './delayed-task-handler.decorator.js';
export {
  defineTask,
  type DurationText,
  type JsonPayload,
  type TaskDefinition,
  type TaskTiming,
  type TypedHandler,
} from './task-definition.js';
export { TaskOutcome } from './task.types.js';
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
  EntityActionOptions,
  EntityActionResult,
  EntityMoveRequest,
  DelayExecutor,
  ClaimClient,
} from './task.types.js';
export {
  ScheduleNotFoundError,
  DelayValidationError,
  DuplicateHandlerError,
  UnknownTaskTypeError,
  TaskNotFoundError,
  TaskStateError,
  UnknownOptionError,
} from './errors/delay-errors.js';
export { DelayExceptionFilter, delayHttpException } from './errors/delay-exception.filter.js';
export { CLOCK, type Clock, type TimerHandle } from './clock/index.js';
export { parseDuration, tryParseDuration, type Duration } from './duration.js';
export { delayMigrations, migrateDelaySchema } from './migrations/index.js';
export type {
  DelayMigration,
  MigrateOptions,
  MigrationRunner,
} from './migrations/migration-runner.js';
export type { DelayStats } from './delay-stats.js';
export type {
  ClaimEvent,
  DelayObserver,
  TaskAttemptEvent,
  TaskCancelledEvent,
  TaskDeadLetteredEvent,
  TaskEventTask,
  TaskExecutedEvent,
  TaskFailedEvent,
  TaskScheduledEvent,
  TaskSnoozedEvent,
} from './delay-observer.js';
export { currentTask, type CurrentTask } from './claim/attempt-runner.js';
export { AfterCommit } from './observer/after-commit.js';
