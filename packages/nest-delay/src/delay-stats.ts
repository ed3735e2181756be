import type { ExecutionCounts } from './runtime/execution-stats.js';

/** What `DelayService.stats()` returns: one instance's view, from memory. */
export interface DelayStats extends ExecutionCounts {
  /** Tasks held in this instance's wheel. */
  held: number;
  /** Fired or overdue ids waiting for a claim transaction. */
  queued: number;
  /** A backlog read is under way. */
  drainingBacklog: boolean;
  instanceId: string;
  /** Started and not stopping: it fires, claims and loads. */
  running: boolean;
  lease: {
    /** Its last heartbeat reached the database and has not run out (by the module's clock). */
    live: boolean;
    /** When it runs out unless renewed; undefined before the first heartbeat and after stop. */
    expiresAt: Date | undefined;
  };
}
