import type { EntityManager } from 'typeorm';
import type { Duration } from './duration.js';

/** JSON as Postgres' jsonb stores it. */
export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type TaskState = 'pending' | 'executed' | 'cancelled' | 'dead';

/** A row of `delayed_task`, as the API returns it. */
export interface DelayedTask<P = JsonValue> {
  /** bigserial, as a string so it never loses precision. */
  id: string;
  type: string;
  key: string | null;
  payload: P;
  dueAt: Date;
  state: TaskState;
  executedAt: Date | null;
  cancelledAt: Date | null;
  deadAt: Date | null;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  lockedBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface ScheduleRequest<P = JsonValue> {
  /** The handler's name, e.g. `order.auto-review`. */
  type: string;
  payload?: P;
  /** How long from now: milliseconds or `'30m'`, `'48h'`... Give this or `runAt`. */
  delay?: Duration;
  runAt?: Date | string | number;
  /** A business key such as `order:42:auto-review`; one pending task per key. */
  key?: string;
  /** With a key that is already pending: keep that task (default) or move it to this one. */
  ifExists?: 'keep' | 'replace';
  maxAttempts?: number;
}

export interface TransactionOptions {
  /** Write in the caller's transaction: the task exists only if it commits. */
  manager?: EntityManager;
}

/** What a handler receives besides the payload. */
export interface TaskContext<P = JsonValue> {
  task: DelayedTask<P>;
  /** The claim transaction: writes through it commit together with executed_at, or not at all. */
  manager: EntityManager;
  /** The instance running it (DelayModule option instanceId). */
  instanceId: string;
}

export type TaskHandlerFn<P = any> = (payload: P, context: TaskContext<P>) => unknown;

/** A task id (number or digit string) or a business key. */
export type TaskRef = string | number;
