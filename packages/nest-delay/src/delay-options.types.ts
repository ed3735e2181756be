// The options' shapes, apart from how they are resolved (delay.options.ts),
// so that option-keys.ts can list their keys without an import cycle.
import type { TaskLimit } from './task-limit.js';
import type { Duration } from './duration.js';
import type { DelayObserver } from './delay-observer.js';

export interface RetryPolicy {
  /** Attempts before a task is dead-lettered (default 5); a task may set its own. */
  maxAttempts?: number;
  /** First retry after this long, doubling each attempt (default 1s). */
  baseDelay?: Duration;
  /** Backoff ceiling (default 1h). */
  maxDelay?: Duration;
  /** Random spread as a fraction of the delay, 0..1 (default 0.2). */
  jitter?: number;
}

/** Options of one handler, on its decorator: `@DelayedTaskHandler('type', { maxAttempts: 3 })`. */
export interface HandlerOptions {
  /** Attempts for tasks of this type scheduled without their own (default: the module's). */
  maxAttempts?: number;
  /** Backoff between this type's attempts (default: the module's `retry`). */
  retry?: Omit<RetryPolicy, 'maxAttempts'>;
  /** How long one attempt may run before its signal aborts (default: the module's `handlerTimeout`). */
  timeout?: Duration;
  /**
   * Shared limits for this type, across every instance: handlers at once,
   * starts per period, optionally per key of the payload (docs/limits.md).
   * Changed at run time with DelayLimits.
   */
  limit?: TaskLimit;
}

/** A backoff with every field known. */
export interface Backoff {
  baseMs: number;
  maxMs: number;
  jitter: number;
}

/** How long finished tasks are kept; `false` keeps them forever. */
export interface RetentionPolicy {
  /** Executed and cancelled tasks, after they finished (default 7d). */
  finished?: Duration | false;
  /** Dead-lettered tasks, after they died (default 30d): time to look and retry. */
  dead?: Duration | false;
  /** How often one instance prunes (default 1m). */
  interval?: Duration;
}

export interface DelayModuleOptions {
  /**
   * Length of one wheel tick (default 1000 ms): how far ahead of their due time
   * entries leave the wheel for the due queue. Not the timing resolution: each
   * task fires at its own due time, whatever the tick.
   */
  tickMs?: number;
  /** Slots in the ring (default 3600): one revolution is slots × tickMs. */
  slots?: number;
  /** Tasks due within this window are held in memory (default: one revolution). */
  window?: Duration;
  /**
   * Claim transactions that run at once, each holding a connection of the
   * pool (default: half the pool size, at least 1, at most 10, so the app's
   * requests always find connections behind a backlog).
   */
  concurrency?: number;
  /** Most tasks claimed in one transaction (default 50). */
  batchSize?: number;
  /**
   * @deprecated Since 0.3, and without effect: a claim's handlers run one
   * after another, each under a savepoint. For handlers that wait on
   * something outside the database, raise `concurrency` (claims on
   * connections of their own) instead.
   */
  handlersPerClaim?: number;
  /** How long an instance's hold on its tasks outlives its last heartbeat (default 30s). */
  lease?: Duration;
  /** How many tasks one loader query leases (default 5000). */
  loadPageSize?: number;
  retry?: RetryPolicy;
  /** Names this process in `delayed_task.locked_by` (default: host-pid-random). */
  instanceId?: string;
  /** Let `schedule` accept types no handler here knows (apps that only produce tasks). */
  allowUnknownTypes?: boolean;
  /** How long shutdown waits for in-flight handlers (default 10s). */
  shutdownTimeout?: Duration;
  /**
   * How long one attempt of a handler may run (default 60s; a handler may set
   * its own). At the timeout its context's `signal` aborts; a handler still
   * running a grace period later is cut off and the attempt counts as failed.
   */
  handlerTimeout?: Duration;
  /** Deleting old finished tasks; see RetentionPolicy. */
  retention?: RetentionPolicy;
  /** Told of every task's lifecycle after commit (metrics, events); see DelayObserver. */
  observer?: DelayObserver;
  /**
   * OpenTelemetry tracing (default true): with `@opentelemetry/api` installed
   * and an SDK registered, a task keeps the trace context it was scheduled in
   * and its handler's span continues it. `false` never loads the API.
   */
  tracing?: boolean;
  /**
   * Prepare the claim's statement once per connection (default true), so
   * Postgres does not plan it again at every claim: most of a small claim's
   * cost. Set false behind a pooler in transaction mode that does not carry
   * prepared statements (PgBouncer before 1.21). Without it, the first claim
   * that meets such a pooler fails, is retried a tick later, and the engine
   * stops preparing, with a warning that says so.
   */
  preparedStatements?: boolean;
}
