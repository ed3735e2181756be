import { DatabaseClock } from './clock/index.js';
import type { DelayRuntime } from './runtime/delay.runtime.js';
import type { ExecutionCounts } from './observer/observer-calls.js';
import type { PlanningCounts } from './schedules/schedule-planner.js';

/** What `DelayService.stats()` returns: one instance's view, from memory. */
export interface DelayStats extends ExecutionCounts {
  /** Tasks held in this instance's wheel. */
  held: number;
  /** Fired or overdue ids waiting for a claim transaction. */
  queued: number;
  /** Tasks the stranded sweep found leased here, overdue and held nowhere, and held again (each logged as a warning). */
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
  /** Recurring schedules' occurrences this instance planned and missed (dropped by a catch-up policy) since it started. */
  occurrences: PlanningCounts;
  lease: {
    /** Its last heartbeat reached the database and has not run out (by the module's clock). */
    live: boolean;
    /** When it runs out unless renewed; undefined before the first heartbeat and after stop. */
    expiresAt: Date | undefined;
  };
}

/** DelayService.stats(): read from the runtime's memory, without a query. */
export function statsSnapshot(runtime: DelayRuntime): DelayStats {
  const { dispatcher, wheel, backlog, lease, planner, ctx } = runtime;
  const nowMs = ctx.clock.now();
  const expiresAt = lease.expiresAt;
  return {
    ...dispatcher.stats.snapshot(),
    held: wheel.size,
    queued: dispatcher.queuedCount,
    rescued: runtime.sweep.rescued,
    unhandledTypes: { ...lease.unhandledTypes },
    drainingBacklog: backlog.busy,
    instanceId: ctx.options.instanceId,
    running: runtime.running,
    clock:
      ctx.clock instanceof DatabaseClock
        ? { correctionMs: ctx.clock.correctionMs, roundTripMs: ctx.clock.roundTripMs }
        : undefined,
    occurrences: planner.planning,
    lease: {
      live: runtime.running && expiresAt !== undefined && expiresAt > nowMs,
      expiresAt: expiresAt === undefined ? undefined : new Date(expiresAt),
    },
  };
}
