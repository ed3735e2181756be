import { DatabaseClock } from '../clock/index.js';
import { errorText } from '../delay.messages.js';
import {
  findUnhandledTypes,
  heartbeat,
  releaseExpiredInstances,
  releaseInstanceTasks,
  releaseTasksOfMissingInstances,
  retireInstance,
  handBackTasks,
} from './lease-statements.js';
import { forgetSettledAttempts } from '../claim/attempt-notes.js';
import type { BacklogDrainer } from './backlog-drainer.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import { ClockWatch } from './clock-watch.js';
import { PeriodicRound } from '../context/periodic-round.js';
import type { WindowLoader } from './window-loader.js';
import {
  HAND_BACK_STEP,
  MISSING_INSTANCE_SWEEP_EVERY,
  UNHANDLED_SAMPLE,
} from '../context/tuning.js';

/**
 * This instance's lease in `delay_instance`, renewed every heartbeat (a third
 * of the lease, so one lost beat does not cost it), and the takeover of
 * expired instances. Every few beats it also releases tasks leased to missing
 * instances and looks for types no live instance handles.
 */
export class InstanceLease implements LifecycleService {
  private readonly rounds: PeriodicRound;
  private beats = 0;
  private lastBeatAtMs: number | undefined;
  /** After a jump of the clock: the expiry cutoff held until `untilMs` (see expiryCutoff). */
  private jump: { cutoffMs: number; untilMs: number } | undefined;
  private readonly clockWatch: ClockWatch | undefined;
  /** Set at a clean stop: hand this instance's tasks back instead of waiting out the lease. */
  private releaseAtStop = true;
  /** Task types with overdue tasks that no live instance can run, and how many wait (findUnhandledTypes). */
  unhandledTypes: Record<string, number> = {};
  /** Until when the last heartbeat that reached the database keeps the lease (by the clock). */
  private expiresAtMs: number | undefined;

  constructor(
    private readonly ctx: DelayContext,
    private readonly backlog: BacklogDrainer,
    private readonly loader: WindowLoader,
  ) {
    if (ctx.clock instanceof DatabaseClock) this.clockWatch = new ClockWatch(ctx.clock, ctx.logger);
    this.rounds = new PeriodicRound(
      ctx.clock,
      ctx.options.heartbeatMs,
      () => this.beat(),
      (error) =>
        ctx.logger.error(
          `Delay heartbeat failed, trying again in ${ctx.options.heartbeatMs} ms (lease ${ctx.options.leaseMs} ms): ${errorText(error)}`,
        ),
    );
  }

  get busy(): boolean {
    return this.rounds.busy;
  }

  /** Releases what an earlier process under this id held (its wheel died with it) before taking the lease. */
  async start(): Promise<void> {
    const { db, options, clock } = this.ctx;
    await releaseInstanceTasks(db.pool, options.instanceId);
    await this.beat();
    await releaseTasksOfMissingInstances(db.pool, new Date(clock.now()));
    this.rounds.start();
  }

  /** When the lease runs out unless renewed; undefined before the first heartbeat and after stop. */
  get expiresAt(): number | undefined {
    return this.expiresAtMs;
  }

  /** Keep the lease at stop (its tasks wait for it to expire), as a crashed process would. */
  keepLeaseAtStop(): void {
    this.releaseAtStop = false;
  }

  async stop(): Promise<void> {
    await this.rounds.stop();
    this.expiresAtMs = undefined;
    if (!this.releaseAtStop || !this.ctx.db.isOpen) return;
    const { db, options, logger } = this.ctx;
    try {
      while ((await handBackTasks(db.pool, options.instanceId, HAND_BACK_STEP)) === HAND_BACK_STEP);
      const kept = await retireInstance(db.pool, options.instanceId);
      if (kept > 0)
        logger.warn(
          `${kept} task(s) of claims cut off at stop stay leased to this instance until its lease expires (within ${options.leaseMs} ms); the rest were handed back`,
        );
    } catch (error) {
      this.ctx.logger.warn(
        `Could not release leases at shutdown; they expire in ${this.ctx.options.leaseMs} ms: ${errorText(error)}`,
      );
    }
  }

  renew(): Promise<void> {
    return this.rounds.runNow();
  }

  private async beat(): Promise<void> {
    const { clock, options, db } = this.ctx;
    const nowMs = clock.now();
    const expiredBefore = new Date(this.expiryCutoff(nowMs));
    const corrected = clock instanceof DatabaseClock ? clock : undefined;
    const sentMs = corrected?.localNow();
    const { expired, databaseMs } = await heartbeat(
      db.pool,
      options.instanceId,
      new Date(nowMs),
      new Date(nowMs + options.leaseMs),
      expiredBefore,
      corrected ? corrected.correctionMs : null,
      this.ctx.policy.handledTypes,
    );
    this.expiresAtMs = nowMs + options.leaseMs;
    if (corrected && sentMs !== undefined) {
      corrected.sample({ sentMs, databaseMs, receivedMs: corrected.localNow() });
      this.clockWatch?.check();
    }
    if (++this.beats % MISSING_INSTANCE_SWEEP_EVERY === 0) {
      await releaseTasksOfMissingInstances(db.pool, expiredBefore);
      await forgetSettledAttempts(db.pool, new Date(nowMs - options.leaseMs));
      await this.findUnhandled(nowMs);
    }
    if (expired.length === 0) return;
    await releaseExpiredInstances(db.pool, expired, expiredBefore);
    this.ctx.logger.warn(
      `Took over the tasks of instance(s) whose lease expired: ${expired.join(', ')}`,
    );
    this.backlog.request();
    void this.loader.refresh();
  }

  /** Warns once per type whose overdue unleased tasks no live instance handles: they wait, never dead-lettered for it. */
  private async findUnhandled(nowMs: number): Promise<void> {
    const { db, options, logger } = this.ctx;
    const rows = await findUnhandledTypes(
      db.pool,
      new Date(nowMs - options.leaseMs),
      UNHANDLED_SAMPLE,
    );
    for (const { type, waiting } of rows) {
      if (type in this.unhandledTypes) continue;
      logger.warn(
        `Task type ${type}: ${waiting} overdue task(s) wait because no live instance has a handler for it; they run once one starts`,
      );
    }
    this.unhandledTypes = Object.fromEntries(rows.map((row) => [row.type, row.waiting]));
  }

  /**
   * Leases that ran out before this time have expired: normally now. After a
   * jump of time (more than two leases, or backwards: a clock step, a
   * suspended process) the others could not renew across it, so for one lease
   * only those that had run out a heartbeat after the last beat before the
   * jump count: a jump steals no live lease.
   */
  private expiryCutoff(nowMs: number): number {
    const { leaseMs, heartbeatMs } = this.ctx.options;
    const last = this.lastBeatAtMs;
    this.lastBeatAtMs = nowMs;
    if (last !== undefined) {
      const gapMs = nowMs - last;
      if (gapMs < 0 || gapMs > 2 * leaseMs) {
        this.jump = { cutoffMs: Math.min(nowMs, last + heartbeatMs), untilMs: nowMs + leaseMs };
        this.ctx.logger.warn(
          `The clock moved ${Math.round(gapMs)} ms between two heartbeats (${heartbeatMs} ms apart): a clock step or a stalled process; other instances get a lease (${leaseMs} ms) from now to renew theirs`,
        );
      }
    }
    if (this.jump && nowMs < this.jump.untilMs) return Math.min(nowMs, this.jump.cutoffMs);
    this.jump = undefined;
    return nowMs;
  }
}
