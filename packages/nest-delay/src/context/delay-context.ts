import type { Logger } from '@nestjs/common';
import type { Clock } from '../clock/index.js';
import type { ResolvedDelayOptions } from '../delay.options.js';
import type { AfterCommit } from '../observer/after-commit.js';
import type { ObserverCalls } from '../observer/observer-calls.js';
import type { Database } from '../store/sql.js';
import type { TaskTracing } from '../tracing/task-tracing.js';
import type { WindowPolicy } from '../tasks/window-policy.js';

/** What every lifecycle service of the runtime shares, instead of long constructor lists. */
export interface DelayContext {
  readonly clock: Clock;
  readonly options: ResolvedDelayOptions;
  /** Claim transactions at once: the option, or one less than the pool (1..10). */
  readonly concurrency: number;
  readonly logger: Logger;
  readonly db: Database;
  readonly policy: WindowPolicy;
  /** The app's DelayObserver, each call guarded. */
  readonly observer: ObserverCalls;
  /** Defers a notification about a write in a caller's transaction until it commits. */
  readonly afterCommit: AfterCommit;
  /** Trace contexts kept with tasks and handlers' spans; undefined without OpenTelemetry. */
  readonly tracing: TaskTracing | undefined;
}

/** `start()` resolves once the service does its job, `stop()` once nothing of it runs; each is called once, in that order. */
export interface LifecycleService {
  start(): Promise<void>;
  stop(): Promise<void>;
}
