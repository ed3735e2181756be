import type { ExecutionCounts } from './claim/claim-outcomes.js';
import type { PlanningCounts } from './schedules/schedule-planner.js';

/** What `DelayService.stats()` returns: one instance's view, from memory. */
export interface DelayStats extends ExecutionCounts {
  /** Tasks held in this instance's wheel. */
  held: number;
  /** Fired or overdue ids waiting for a claim transaction. */
  queued: number;
  /**
   * Tasks the safety net found leased here, overdue and held nowhere in this
   * instance, and held again (an engine fault: each is logged as a warning).
   */
  rescued: number;
  /**
   * Task types with tasks overdue by a lease that no live instance has a
   * handler for, and how many of the oldest overdue tasks they are (read
   * every sixth heartbeat): they wait, never dead-lettered for that.
   */
  unhandledTypes: Record<string, number>;
  /** A backlog read is under way. */
  drainingBacklog: boolean;
  instanceId: string;
  /** Started and not stopping: it fires, claims and loads. */
  running: boolean;
  /**
   * The correction this instance adds to its system clock to read the
   * database's time (DatabaseClock), and the round trip it was measured
   * with; undefined on a clock of its own (a test's ManualClock).
   */
  clock: { correctionMs: number; roundTripMs: number | undefined } | undefined;
  /**
   * Recurring schedules' occurrences this instance planned (turned into
   * tasks) and missed (dropped by a catch-up policy) since it started.
   */
  occurrences: PlanningCounts;
  lease: {
    /** Its last heartbeat reached the database and has not run out (by the module's clock). */
    live: boolean;
    /** When it runs out unless renewed; undefined before the first heartbeat and after stop. */
    expiresAt: Date | undefined;
  };
}
