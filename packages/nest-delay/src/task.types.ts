import type { EntityManager } from 'typeorm';
import { parseDuration, type Duration } from './duration.js';

/** JSON as Postgres' jsonb stores it. */
export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * A task's id: the bigserial as its decimal digits, from the database to the
 * wheel and back, so it never passes through a float that could round it.
 */
export type TaskId = string;

/** Names one task: by id, or by business key (the pending task holding it, else its latest). */
export type TaskRef = { id: TaskId } | { key: string };

/** `pending` until it runs (`executed`), is cancelled, or is dead-lettered (`dead`). */
export type TaskState = 'pending' | 'executed' | 'cancelled' | 'dead';

/** A row of `delayed_task`, as the API returns it. */
export interface DelayedTask<P = JsonValue> {
  id: TaskId;
  type: string;
  key: string | null;
  /** The business object it belongs to (`order:42`), or null: see ScheduleRequest.entity. */
  entity: string | null;
  payload: P;
  dueAt: Date;
  state: TaskState;
  executedAt: Date | null;
  cancelledAt: Date | null;
  deadAt: Date | null;
  attempts: number;
  maxAttempts: number;
  lastError: string | null;
  /** The instance whose wheel holds it, or null. */
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
  /** A business key such as `order:42:auto-review`; at most one pending task per key. */
  key?: string;
  /**
   * The business object the task belongs to, such as `order:42` (1 to 500
   * characters): every task of one entity can be cancelled or moved at once
   * (DelayService.cancelEntity, rescheduleEntity) without knowing their keys.
   */
  entity?: string;
  /**
   * With a key that is already pending: keep that task (default), move it to
   * this request (`replace`), or `debounce`: move it to this request but
   * never later than `maxWait` after the pending task was first scheduled
   * (a trailing debounce with a maximum wait; one task runs).
   */
  ifExists?: 'keep' | 'replace' | 'debounce';
  /**
   * With `ifExists: 'debounce'` (and only then): how long after the first
   * request the task runs at the latest, however often it is pushed back.
   * Pass the same for every request of a key.
   */
  maxWait?: Duration;
  /** Default: the handler's `maxAttempts`, else the module's `retry.maxAttempts`. */
  maxAttempts?: number;
}

/** One result per request of `scheduleMany`, in the order of the requests. */
export type BulkScheduleResult =
  | { status: 'scheduled'; id: TaskId; key: string | null; dueAt: Date }
  /** Its key was already pending (or earlier in the same call): the task holding it. */
  | { status: 'duplicate'; id: TaskId; key: string };

/**
 * A transaction (or a connection) as the engine runs statements on it: one
 * parameterised statement (`$1`, `$2`, … which may repeat) in, its rows out
 * as node-pg parses them (a timestamptz as a Date). The bindings build one
 * from your ORM's transaction: `nest-delay/pg`, `nest-delay/kysely`,
 * `nest-delay/drizzle` (docs/bindings.md).
 */
export interface DelayExecutor {
  /**
   * `name`: the engine's own hot statements carry one, asking to be kept
   * prepared where the connection can (a claim's); an executor may ignore it.
   */
  rows<T>(text: string, params: unknown[], name?: string): Promise<T[]>;
}

/** The node-pg client (a pool's client) a claim transaction runs on, as far as a handler needs it. */
export interface ClaimClient {
  query(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: unknown[]; rowCount: number | null; command: string }>;
}

/**
 * Whose transaction a write joins: a TypeORM `manager`, or any other
 * `transaction` (at most one of the two). The change exists only if it commits.
 */
export interface TransactionOptions {
  /** Write in the caller's TypeORM transaction. */
  manager?: EntityManager;
  /**
   * Write in the caller's transaction of another ORM or of plain pg, through
   * a binding (`pgTransaction(client)`, `kyselyTransaction(trx)`,
   * `drizzleTransaction(tx)`). The engine cannot see it commit: a task
   * written here is held at once (never later than its due time), and one
   * that fires before the commit is found by the loader's next round.
   */
  transaction?: DelayExecutor;
  /**
   * With `transaction` only: how to run a function once it commits (never
   * after a rollback). The engine passes the observer's events (onScheduled,
   * onCancelled) and a second hold of a task due before the loader's next
   * round. Without it those events are not reported for this write: the
   * observer only ever reports what committed.
   */
  afterCommit?: (run: () => void) => void;
}

/** Which of an entity's tasks an entity action takes, and in whose transaction. */
export interface EntityActionOptions extends TransactionOptions {
  /** Only the tasks of these types; default: every type. */
  types?: string[];
}

/** How an entity's tasks move: each later by a duration from its own due time, or all to one time. */
export type EntityMoveRequest = { by: Duration } | { to: Date | string | number };

/**
 * What an entity action changed: the tasks that were pending and are now
 * cancelled (or moved), in id order, and how many of each type. A task that
 * was running when the action came waits for its attempt to end first; it is
 * listed only if that attempt left it pending (a retry or a snooze), not if
 * it completed or was dead-lettered.
 */
export interface EntityActionResult {
  entity: string;
  ids: TaskId[];
  byType: Record<string, number>;
  tasks: DelayedTask[];
}

/** When to run a task again: in a duration from now, or at a time. */
export type RunAt = { delay: Duration } | { runAt: Date | string | number };

/** What a handler receives besides the payload. */
export interface TaskContext<P = JsonValue> {
  task: DelayedTask<P>;
  /** The claim transaction: writes through it commit together with executed_at, or not at all. */
  manager: EntityManager;
  /** The same transaction as statements and rows (a binding's `kyselyOn`, `drizzleOn` need no more). */
  sql: DelayExecutor;
  /** The same transaction's node-pg client: a write through it commits with executed_at too. Never release or end it. */
  client: ClaimClient;
  /** This attempt's number, from 1. */
  attempt: number;
  /**
   * Aborts when the attempt reaches its timeout (handler option `timeout`,
   * module option `handlerTimeout`): pass it to fetch, or stop when it fires.
   * A handler still running a grace period later is cut off.
   */
  signal: AbortSignal;
  /** The instance running it (DelayModule option instanceId). */
  instanceId: string;
  /** For an occurrence of a recurring schedule: which, when it was due by its rule, and the one before. */
  occurrence?: Occurrence;
}

/** What a handler of a recurring task gets in `context.occurrence`. */
export interface Occurrence {
  schedule: string;
  /** The instant this occurrence was due, by its rule (not when it ran, nor a retry's time). */
  scheduledAt: Date;
  /** The occurrence before it by the rule, whether that one ran or was missed; null for the first. */
  previousAt: Date | null;
}

/**
 * What a handler can return instead of nothing, to say what became of its
 * task (River's JobCancel and JobSnooze, Oban's `{:cancel, _}` and `{:snooze, _}`):
 *
 *     if (!isValid(payload)) return TaskOutcome.discard('payload.orderId is not a UUID');
 *     if (!provider.ready()) return TaskOutcome.snooze('5m');
 *
 * Either way the handler's own writes through `manager` commit, as after a
 * normal return. Throwing is still how a handler says "failed, retry me".
 */
export class TaskOutcome {
  private constructor(
    readonly kind: 'discard' | 'snooze',
    readonly reason: string | undefined,
    readonly snoozeMs: number,
  ) {}

  /** Dead-letter the task now, with `reason` as its last error: retrying cannot help it. */
  static discard(reason: string): TaskOutcome {
    return new TaskOutcome('discard', String(reason), 0);
  }

  /** Run the task again after `delay`, without spending an attempt. */
  static snooze(delay: Duration): TaskOutcome {
    return new TaskOutcome('snooze', undefined, parseDuration(delay, 'TaskOutcome.snooze delay'));
  }
}
