import { Injectable } from '@nestjs/common';
import { ScheduleNotFoundError, UnknownTaskTypeError } from '../errors/delay-errors.js';
import { HandlerRegistry } from '../handler-registry.js';
import { DelayRuntime } from '../runtime/delay.runtime.js';
import {
  listSchedules,
  pauseSchedule,
  removeSchedules,
  resumeSchedule,
  upsertSchedule,
  type ScheduleListRow,
} from './schedule-statements.js';
import { resolveSchedule } from './schedule-spec.js';
import type { ScheduleDefinition, ScheduleInfo } from './schedule.types.js';

/**
 * Recurring schedules at run time, beside those declared with @RecurringTask.
 * Each change is one transaction on `delay_schedule`, which every instance
 * plans from, so it takes effect everywhere at once; an occurrence of a
 * paused, removed or changed schedule is withdrawn at its claim, not run.
 */
@Injectable()
export class DelaySchedules {
  constructor(
    private readonly runtime: DelayRuntime,
    private readonly handlers: HandlerRegistry,
  ) {}

  /** Adds a schedule, or changes it (replanned from now); returns it as listed. */
  async upsert(name: string, definition: ScheduleDefinition): Promise<ScheduleInfo> {
    const { spec, recurrence } = resolveSchedule(name, definition, false);
    if (!this.runtime.ctx.options.allowUnknownTypes && !this.handlers.has(spec.type)) {
      throw new UnknownTaskTypeError(spec.type, this.handlers.types());
    }
    const nowMs = this.now();
    const first = recurrence.next(nowMs - 1);
    await upsertSchedule(
      this.runtime.ctx.db,
      spec,
      first === undefined ? null : new Date(first),
      new Date(nowMs),
    );
    await this.plan();
    return this.get(name);
  }

  /** Removes a schedule everywhere, with its occurrences not yet due. */
  async remove(name: string): Promise<void> {
    const removed = await removeSchedules(this.runtime.ctx.db, [name], new Date(this.now()));
    if (removed.length === 0) throw new ScheduleNotFoundError(name);
  }

  /** Stops planning it (what was planned ahead is withdrawn); returns it. */
  async pause(name: string): Promise<ScheduleInfo> {
    const row = await pauseSchedule(this.runtime.ctx.db, name, new Date(this.now()));
    if (!row) throw new ScheduleNotFoundError(name);
    return this.get(name);
  }

  /** Plans it again; what it missed while paused follows its catch-up policy. */
  async resume(name: string): Promise<ScheduleInfo> {
    const row = await resumeSchedule(this.db, name, new Date(this.now()));
    if (!row) throw new ScheduleNotFoundError(name);
    await this.plan();
    return this.get(name);
  }

  async list(): Promise<ScheduleInfo[]> {
    return (await listSchedules(this.db, new Date(this.now()))).map(toInfo);
  }

  async get(name: string): Promise<ScheduleInfo> {
    const [found] = await listSchedules(this.db, new Date(this.now()), name);
    if (!found) throw new ScheduleNotFoundError(name);
    return toInfo(found);
  }

  private plan(): Promise<void> {
    return this.runtime.running ? this.runtime.planner.runNow() : Promise.resolve();
  }

  private now(): number {
    return this.runtime.ctx.clock.now();
  }

  private get db() {
    return this.runtime.ctx.db.pool;
  }
}

function toInfo(row: ScheduleListRow): ScheduleInfo {
  return {
    name: row.name,
    type: row.type,
    cron: row.cron,
    timeZone: row.time_zone,
    everyMs: row.every_ms === null ? null : Number(row.every_ms),
    catchUp: row.catch_up,
    catchUpCap: row.catch_up_cap,
    overlap: row.overlap,
    paused: row.paused,
    inCode: row.in_code,
    nextAt: row.next_at,
    upcomingAt: row.paused ? null : (row.next_planned_at ?? row.next_at),
    lastPlannedAt: row.last_at,
    missed: Number(row.missed_total),
    planError: row.plan_error,
    lastOccurrence:
      row.last_task_id === null
        ? null
        : {
            at: row.last_occurrence_at!,
            taskId: row.last_task_id,
            state: row.last_state!,
            lastError: row.last_error,
          },
  };
}
