import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { parseDuration, type Duration } from './duration.js';
import type { TaskLimit } from './task-limit.js';
import type { DelayObserver } from './delay-observer.js';
import type { TaskContext, TransactionOptions } from './task.types.js';

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
   * The engine's own database: a pg `Pool` (the app keeps ending it) or a
   * connection string (the engine opens a pool of 10 and ends it at
   * shutdown). Its claims then never take a connection the app's requests
   * need, and no TypeORM is needed: apps on Prisma, Drizzle, Kysely,
   * MikroORM or plain pg give this and schedule through a binding
   * (docs/bindings.md); handlers use `context.sql` or `context.client`.
   * Default: the pool of the app's TypeORM DataSource (the `dataSource` extra
   * picks which), where handlers also get `context.manager`.
   */
  connection?: string | DelayPool;
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
  /**
   * A transaction the app holds without passing it (an ambient one, such as
   * `@nestjs-cls/transactional`'s; `nest-delay/cls` builds this for it):
   * what a DelayService call joins when it names none, and how a handler
   * runs so that the ambient transaction is its claim's (docs/bindings.md).
   */
  ambientTransaction?: AmbientTransaction;
}

/** An ambient transaction, as the engine joins and provides it. */
export interface AmbientTransaction {
  /**
   * The transaction a DelayService call joins when it gives neither
   * `manager` nor `transaction`, or undefined when none is open (the call
   * then writes on its own, as without this option).
   */
  current(): TransactionOptions | undefined;
  /**
   * Runs a handler (`run`, once) with its claim's transaction, in `context`,
   * as the ambient one, and returns what `run` returns.
   */
  runHandler<T>(context: TaskContext, run: () => Promise<T>): Promise<T>;
}

/** A pg Pool, as far as the engine uses one (pg's own `Pool` is one). */
export interface DelayPool {
  connect(): Promise<unknown>;
  query(text: string, params?: unknown[]): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'connect', listener: (client: never) => void): unknown;
  readonly options?: { max?: number };
}

// Values: each checked, with its default.

function positiveInteger(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(
      `DelayModule option ${name} must be a positive integer; got ${String(value)}`,
    );
  }
  return value;
}

function atMost(value: number, limit: number, name: string): number {
  if (value > limit) {
    throw new TypeError(`DelayModule option ${name} must be at most ${limit}; got ${value}`);
  }
  return value;
}

function positiveDuration(value: Duration | undefined, name: string, fallback: Duration): number {
  const ms = durationOption(value, name, fallback);
  if (ms < 1 || ms > 2 ** 31 - 1) {
    // setTimeout's limit: beyond it a timer fires after 1 ms.
    throw new TypeError(`DelayModule option ${name} must be from 1 ms to 24.8 days; got ${ms} ms`);
  }
  return ms;
}

function keepFor(value: Duration | false | undefined, name: string, fallback: Duration) {
  if (value === false) return null;
  const ms = durationOption(value, name, fallback);
  if (ms < 1) {
    throw new TypeError(
      `DelayModule option ${name} must be a positive duration, or false to keep forever; got ${ms} ms`,
    );
  }
  return ms;
}

function durationOption(value: Duration | undefined, name: string, fallback: Duration): number {
  return parseDuration(value ?? fallback, `DelayModule option ${name}`);
}

/** The options with every default filled in; retention's null keeps forever. */
export type ResolvedDelayOptions = ReturnType<typeof resolveDelayOptions>;

export function resolveDelayOptions(options: DelayModuleOptions = {}) {
  const tickMs = positiveInteger(options.tickMs, 'tickMs', 1000);
  const slots = positiveInteger(options.slots, 'slots', 3600);
  const leaseMs = durationOption(options.lease, 'lease', '30s');
  if (leaseMs < 1000)
    throw new TypeError(`DelayModule option lease must be at least 1s; got ${leaseMs} ms`);
  const windowMs = durationOption(options.window, 'window', tickMs * slots);
  // Deprecated and without effect, but still checked: a typo'd value is a mistake worth naming.
  positiveInteger(options.handlersPerClaim, 'handlersPerClaim', 1);
  if (windowMs < tickMs) {
    throw new TypeError(
      `DelayModule option window must be at least one tick (${tickMs} ms); got ${windowMs} ms`,
    );
  }
  return {
    connection: connectionOption(options.connection),
    tickMs,
    slots,
    windowMs,
    concurrency:
      options.concurrency === undefined
        ? undefined
        : positiveInteger(options.concurrency, 'concurrency', 1),
    batchSize: positiveInteger(options.batchSize, 'batchSize', 50),
    leaseMs,
    // Three heartbeats per lease: one lost or late beat does not cost the lease.
    heartbeatMs: Math.max(250, Math.floor(leaseMs / 3)),
    loadPageSize: positiveInteger(options.loadPageSize, 'loadPageSize', 5000),
    maxAttempts: atMost(
      positiveInteger(options.retry?.maxAttempts, 'retry.maxAttempts', 5),
      1000,
      'retry.maxAttempts',
    ),
    backoff: resolveBackoff(options.retry, DEFAULT_BACKOFF, 'DelayModule option retry'),
    instanceId:
      options.instanceId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    allowUnknownTypes: options.allowUnknownTypes ?? false,
    shutdownTimeoutMs: durationOption(options.shutdownTimeout, 'shutdownTimeout', '10s'),
    handlerTimeoutMs: positiveDuration(options.handlerTimeout, 'handlerTimeout', '60s'),
    keepFinishedMs: keepFor(options.retention?.finished, 'retention.finished', '7d'),
    keepDeadMs: keepFor(options.retention?.dead, 'retention.dead', '30d'),
    pruneEveryMs: positiveDuration(options.retention?.interval, 'retention.interval', '1m'),
    observer: observerOption(options.observer),
    tracing: booleanOption(options.tracing, 'tracing', true),
    preparedStatements: booleanOption(options.preparedStatements, 'preparedStatements', true),
    ambientTransaction: ambientOption(options.ambientTransaction),
  };
}

const AMBIENT_KEYS = ['current', 'runHandler'] as const satisfies (keyof AmbientTransaction)[];

function ambientOption(ambient: AmbientTransaction | undefined): AmbientTransaction | undefined {
  if (ambient === undefined) return undefined;
  for (const key of AMBIENT_KEYS)
    if (typeof (ambient as unknown as Record<string, unknown>)?.[key] !== 'function')
      throw new TypeError(
        `DelayModule option ambientTransaction must have the functions ${AMBIENT_KEYS.join(' and ')} (nest-delay/cls builds one); ${key} is ${typeof (ambient as unknown as Record<string, unknown>)?.[key]}`,
      );
  return ambient;
}

function connectionOption(connection: string | DelayPool | undefined) {
  if (connection === undefined) return undefined;
  if (typeof connection === 'string' && /^postgres(ql)?:\/\//.test(connection)) return connection;
  if (
    typeof connection === 'object' &&
    connection !== null &&
    typeof connection.connect === 'function'
  )
    return connection;
  throw new TypeError(
    `DelayModule option connection must be a pg Pool or a postgres:// connection string; got ${typeof connection === 'string' ? `"${connection.replace(/:[^:@/]*@/, ':***@')}"` : typeof connection}`,
  );
}

function observerOption(observer: DelayObserver | undefined): DelayObserver | undefined {
  if (observer === undefined || observer === null) return undefined;
  if (typeof observer !== 'object' && typeof observer !== 'function') {
    throw new TypeError(
      `DelayModule option observer must be an object with on... methods; got ${typeof observer}`,
    );
  }
  return observer;
}

function booleanOption(value: boolean | undefined, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new TypeError(`DelayModule option ${name} must be true or false; got ${String(value)}`);
  }
  return value;
}

const DEFAULT_BACKOFF: Backoff = { baseMs: 1000, maxMs: 3_600_000, jitter: 0.2 };

/** A retry policy over `fallback`; `where` names it in errors ("DelayModule option retry"). */
export function resolveBackoff(
  retry: Omit<RetryPolicy, 'maxAttempts'> | undefined,
  fallback: Backoff,
  where: string,
): Backoff {
  const jitter = retry?.jitter ?? fallback.jitter;
  if (!(jitter >= 0 && jitter <= 1)) {
    throw new TypeError(`${where}.jitter must be between 0 and 1; got ${String(jitter)}`);
  }
  return {
    baseMs:
      retry?.baseDelay === undefined
        ? fallback.baseMs
        : parseDuration(retry.baseDelay, `${where}.baseDelay`),
    maxMs:
      retry?.maxDelay === undefined
        ? fallback.maxMs
        : parseDuration(retry.maxDelay, `${where}.maxDelay`),
    jitter,
  };
}

/** Exponential backoff with jitter: base × 2^(attempt−1), capped, ± jitter. */
export function retryDelayMs(backoff: Backoff, attempt: number, random = Math.random): number {
  const exponential = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  const spread = exponential * backoff.jitter;
  return Math.max(0, Math.round(exponential - spread + random() * 2 * spread));
}
