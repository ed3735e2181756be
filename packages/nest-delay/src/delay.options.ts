import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { parseDuration, type Duration } from './duration.js';
import type { DelayObserver } from './delay-observer.js';
import { assertKnownOptions } from './option-keys.js';
import type { Backoff, DelayModuleOptions, RetryPolicy } from './delay-options.types.js';

export type {
  Backoff,
  DelayModuleOptions,
  HandlerOptions,
  RetentionPolicy,
  RetryPolicy,
} from './delay-options.types.js';

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
  assertKnownOptions(options);
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
  };
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
