import { errorText } from '../delay.messages.js';
import type { HandlerRegistry } from '../handler-registry.js';
import { planOccurrences, type OccurrencePlan } from './occurrence-plan.js';
import type { ScheduleRegistry } from './schedule-registry.js';
import { recurrenceOf } from './schedule-spec.js';
import {
  advanceSchedule,
  insertOccurrences,
  lockDueSchedules,
  planningDue,
  setAsideSchedule,
} from './recurring-statements.js';
import { upsertSchedule, type ScheduleRow } from './schedule-statements.js';
import {
  conflictingDeclarations,
  declareSchedules,
  removeUndeclared,
} from './declaration-statements.js';
import type { Sql } from '../store/sql.js';
import type { DelayContext, LifecycleService } from '../context/delay-context.js';
import { PeriodicRound } from '../context/periodic-round.js';
import { PLAN_RETRY_FIRST_MS, PLAN_RETRY_MAX_MS, SCHEDULES_PER_PLAN } from '../context/tuning.js';

/** How long a schedule whose plan failed `failures` times before is set aside: a minute, doubling, at most an hour. */
export function planRetryDelayMs(failures: number): number {
  return Math.min(PLAN_RETRY_MAX_MS, PLAN_RETRY_FIRST_MS * 2 ** Math.min(failures, 20));
}

/** What planning has done on this instance since it started. */
export interface PlanningCounts {
  /** Occurrences planned (inserted as tasks). */
  planned: number;
  /** Occurrences a catch-up policy dropped. */
  missed: number;
}

/**
 * Plans schedules: every heartbeat, each schedule with an occurrence within
 * the window is locked, its occurrences up to the horizon inserted as tasks
 * and its next occurrence moved past them, in one transaction. At start it
 * records and writes this instance's declarations; a schedule no live
 * instance declares is removed by any instance's next round.
 */
export class SchedulePlanner implements LifecycleService {
  private readonly rounds: PeriodicRound;
  private readonly counts: PlanningCounts = { planned: 0, missed: 0 };

  constructor(
    private readonly ctx: DelayContext,
    private readonly handlers: HandlerRegistry,
    private readonly declared: ScheduleRegistry,
    /** Leases what this plan inserted within the window (the window loader). */
    private readonly loader: { refresh(): Promise<void> },
  ) {
    this.rounds = new PeriodicRound(
      ctx.clock,
      ctx.options.heartbeatMs,
      () => this.plan(),
      (error) =>
        ctx.logger.error(
          `Planning recurring tasks failed, trying again shortly: ${errorText(error)}`,
        ),
    );
  }

  get busy(): boolean {
    return this.rounds.busy;
  }

  get planning(): PlanningCounts {
    return { ...this.counts };
  }

  async start(): Promise<void> {
    await this.reconcile();
    await this.rounds.runNow();
    this.rounds.start();
  }

  async stop(): Promise<void> {
    await this.rounds.stop();
  }

  runNow(): Promise<void> {
    return this.rounds.runNow();
  }

  /**
   * Records and writes what this instance declares (on a conflict the newest
   * boot's rule wins). Removes nothing: a schedule this code does not declare
   * may be another live instance's.
   */
  private async reconcile(): Promise<void> {
    const { db, clock, logger, options } = this.ctx;
    const nowMs = clock.now();
    const now = new Date(nowMs);
    const declared = this.declared.all();
    await declareSchedules(
      db.pool,
      options.instanceId,
      declared.map(({ spec }) => spec),
      now,
    );
    for (const { spec, recurrence } of declared) {
      const first = recurrence.next(nowMs - 1);
      const changed = await upsertSchedule(
        db,
        spec,
        first === undefined ? null : new Date(first),
        now,
      );
      if (changed) logger.log(`Schedule ${spec.name}: ${recurrence.describe()}, runs ${spec.type}`);
    }
    for (const { name, instance_id } of await conflictingDeclarations(
      db.pool,
      options.instanceId,
    )) {
      logger.warn(
        `Schedule ${name} is declared with another rule by live instance ${instance_id}: this instance's rule, the newest boot's, replaced it`,
      );
    }
  }

  private async plan(): Promise<void> {
    const { db, clock, policy, logger, options } = this.ctx;
    const nowMs = clock.now();
    const { due, undeclared } = await planningDue(
      db.pool,
      new Date(policy.horizonMs(nowMs)),
      new Date(nowMs),
      options.instanceId,
    );
    if (undeclared) {
      const removed = await removeUndeclared(db, options.instanceId, new Date(nowMs));
      if (removed.length > 0)
        logger.log(
          `Schedules no live instance declares in code any more, removed: ${removed.join(', ')}`,
        );
    }
    if (!due) return;
    let inserted = 0;
    for (;;) {
      const { planned, full } = await this.planPage();
      inserted += planned;
      if (!full) break;
    }
    if (inserted > 0) await this.loader.refresh();
  }

  private planPage(): Promise<{ planned: number; full: boolean }> {
    const { db, clock, policy, logger } = this.ctx;
    return db.transaction(async (sql) => {
      let planned = 0;
      const nowMs = clock.now();
      const now = new Date(nowMs);
      const rows = await lockDueSchedules(
        sql,
        new Date(policy.horizonMs(nowMs)),
        now,
        SCHEDULES_PER_PLAN,
      );
      for (const row of rows) {
        let plan: OccurrencePlan;
        try {
          plan = this.planOf(row, nowMs, policy.horizonMs(nowMs), policy.overdueAfterMs);
        } catch (error) {
          // Set aside, not skipped, so the next page does not find it again.
          const retryAt = new Date(nowMs + planRetryDelayMs(row.plan_failures));
          logger.error(
            `Schedule ${row.name} cannot be planned, set aside until ${retryAt.toISOString()}: ${errorText(error)}`,
          );
          await setAsideSchedule(sql, row.name, errorText(error), retryAt, now);
          continue;
        }
        planned += await this.write(sql, row, plan, now);
      }
      return { planned, full: rows.length === SCHEDULES_PER_PLAN };
    });
  }

  private planOf(
    row: ScheduleRow,
    nowMs: number,
    horizonMs: number,
    graceMs: number,
  ): OccurrencePlan {
    return planOccurrences(
      recurrenceOf(row),
      row.next_at!.getTime(),
      row.last_at?.getTime() ?? null,
      nowMs,
      horizonMs,
      graceMs,
      { catchUp: row.catch_up, catchUpCap: row.catch_up_cap },
    );
  }

  private async write(
    sql: Sql,
    row: ScheduleRow,
    plan: OccurrencePlan,
    now: Date,
  ): Promise<number> {
    const ids = await insertOccurrences(
      sql,
      row,
      plan.run,
      this.handlers.maxAttemptsOf(row.type),
      now,
    );
    const last = plan.run.length > 0 ? new Date(plan.run[plan.run.length - 1].atMs) : null;
    await advanceSchedule(
      sql,
      row.name,
      plan.nextMs === undefined ? null : new Date(plan.nextMs),
      last,
      plan.missed,
      now,
    );
    this.counts.planned += ids.length;
    this.counts.missed += plan.missed;
    if (plan.missed > 0) {
      this.ctx.logger.warn(
        `Schedule ${row.name}: ${plan.missed} occurrence(s) missed while no instance ran, dropped by its catch-up policy (${row.catch_up})`,
      );
    }
    return ids.length;
  }
}
