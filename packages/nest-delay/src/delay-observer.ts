import type { TaskId } from './task.types.js';

/** The task an event is about: enough to log it and count it by type. */
export interface TaskEventTask {
  id: TaskId;
  type: string;
  key: string | null;
  /** When it was (or is) due. */
  dueAt: Date;
}

/** A task written pending by `schedule` or `scheduleMany`, once its transaction committed. */
export type TaskScheduledEvent = TaskEventTask;

/** A pending task cancelled through `cancel`, once its transaction committed. */
export type TaskCancelledEvent = TaskEventTask;

/** One attempt's outcome, after its claim transaction committed. */
export interface TaskAttemptEvent extends TaskEventTask {
  /** The attempt that ran, from 1. */
  attempt: number;
}

export interface TaskExecutedEvent extends TaskAttemptEvent {
  /**
   * The engine's lateness: its claim's time minus its due time, in ms (by
   * the module's clock), less `limitWaitMs`. For a task of an unlimited
   * type, the same `executed_at - due_at` the table records. Never negative.
   */
  latenessMs: number;
  /**
   * How long it waited behind a shared limit or a pause of its type (0 for
   * unlimited types): time the limit asked for, not the engine's lateness.
   */
  limitWaitMs: number;
}

export interface TaskFailedEvent extends TaskAttemptEvent {
  error: string;
  /** When the next attempt is due. */
  retryAt: Date;
}

export interface TaskDeadLetteredEvent extends TaskAttemptEvent {
  /** The last error, or the handler's discard reason. */
  reason: string;
}

export interface TaskSnoozedEvent extends TaskAttemptEvent {
  /** When it runs again (the attempt is not spent). */
  until: Date;
}

/** One claim transaction that committed. */
export interface ClaimEvent {
  /** Ids the claim was given. */
  requested: number;
  /** Tasks it claimed and ran (the others were done, moved or locked elsewhere). */
  claimed: number;
  /** Wall time from taking the connection to the commit, in ms. */
  durationMs: number;
}

/**
 * What the module tells about its tasks, for metrics, logs and events in the
 * app (`DelayModule.forRoot({ observer })`). Every method is optional and is
 * called only after the transaction that made the change committed, on this
 * instance; a method that throws (or rejects) is logged and ignored: it never
 * fails a task or a schedule call. Calls are synchronous on the claim's path,
 * so keep them cheap (count, or hand off to a queue).
 */
export interface DelayObserver {
  onScheduled?(event: TaskScheduledEvent): unknown;
  onCancelled?(event: TaskCancelledEvent): unknown;
  onExecuted?(event: TaskExecutedEvent): unknown;
  onFailed?(event: TaskFailedEvent): unknown;
  onDeadLettered?(event: TaskDeadLetteredEvent): unknown;
  onSnoozed?(event: TaskSnoozedEvent): unknown;
  onClaim?(event: ClaimEvent): unknown;
}
