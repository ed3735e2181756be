import { DatabaseClock } from './clock/index.js';
import type { DelayStats } from './delay-stats.js';
import type { DelayRuntime } from './runtime/delay.runtime.js';

/**
 * This instance's counters, what it holds and its lease, read from the
 * runtime's memory: DelayService.stats(), without a query.
 */
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
