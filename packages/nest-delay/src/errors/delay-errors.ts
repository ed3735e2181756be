import { closest } from '../closest-name.js';
import {
  describeRef,
  duplicateHandler,
  taskInState,
  taskNotFound,
  unknownOption,
  unknownType,
} from '../delay.messages.js';
import type { TaskRef, TaskState } from '../task.types.js';

// The package's errors: each names what it is about, for a caller (and
// delayHttpException) to answer without parsing its message.

/** A `DelayService` call was given something it cannot store; nothing was written. */
export class DelayValidationError extends Error {
  override name = 'DelayValidationError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field} ${message}`);
  }
}

/** A string of 1 to `max` characters (the table's CHECKs) without NUL, which Postgres text refuses. */
export function checkText(
  value: unknown,
  field: string,
  max: number,
  what = '',
): asserts value is string {
  if (typeof value !== 'string' || value.length < 1 || value.length > max) {
    throw new DelayValidationError(
      field,
      `must be a string of 1 to ${max} characters${what}; got ${JSON.stringify(value) ?? String(value)}`,
    );
  }
  if (value.includes('\0')) {
    throw new DelayValidationError(
      field,
      `must not contain NUL characters; got ${JSON.stringify(value)}`,
    );
  }
}

/** No task has that id, or ever had that key. */
export class TaskNotFoundError extends Error {
  override name = 'TaskNotFoundError';
  constructor(readonly ref: TaskRef) {
    super(taskNotFound(describeRef(ref)));
  }
}

/** The task exists but the action does not fit its state (cancel an executed task, revive a pending one). */
export class TaskStateError extends Error {
  override name = 'TaskStateError';
  constructor(
    readonly ref: TaskRef,
    readonly state: TaskState,
    readonly action: 'cancel' | 'reschedule' | 'revive' | 'retry',
  ) {
    super(taskInState(describeRef(ref), state, action));
  }
}

/** No schedule has that name. */
export class ScheduleNotFoundError extends Error {
  override name = 'ScheduleNotFoundError';
  constructor(readonly scheduleName: string) {
    super(`No schedule is named ${JSON.stringify(scheduleName)}`);
  }
}

/** Two handlers declare one task type; the boot stops. */
export class DuplicateHandlerError extends Error {
  override name = 'DuplicateHandlerError';
  constructor(
    readonly type: string,
    first: string,
    second: string,
  ) {
    super(duplicateHandler(type, first, second));
  }
}

/** No handler knows this task type. */
export class UnknownTaskTypeError extends Error {
  override name = 'UnknownTaskTypeError';
  constructor(
    readonly type: string,
    known: string[],
  ) {
    super(unknownType(type, known, closest(type, known)));
  }
}

/** An options object has a key the package does not know (a misspelling, most often); the boot stops. */
export class UnknownOptionError extends TypeError {
  override name = 'UnknownOptionError';
  constructor(
    /** Where the key was: `DelayModule`, `DelayModule.forRootAsync`, `@DelayedTaskHandler('type') on X.y`. */
    readonly where: string,
    /** The key as written, with its parent's path: `retry.maxAttempt`. */
    readonly option: string,
    /** The known key it is closest to, if one is close. */
    readonly suggestion: string | undefined,
    known: readonly string[],
    hint?: string,
  ) {
    super(unknownOption(where, option, suggestion, known, hint));
  }
}
