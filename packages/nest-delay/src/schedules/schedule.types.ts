import type { HandlerOptions } from '../delay.options.js';
import type { Duration } from '../duration.js';
import type { JsonValue, TaskId } from '../task.types.js';
export type { Occurrence } from '../task.types.js';
import type { CatchUp } from './occurrence-plan.js';

export type { CatchUp } from './occurrence-plan.js';

/**
 * When a schedule recurs and what it does about what it missed. Give `cron`
 * (five fields, or six with seconds; read in `timeZone`) or `every`.
 */
export interface ScheduleRule {
  /** A cron expression, e.g. `'0 8 * * *'` (08:00 every day), `'0/5 * * * * *'` (every 5 s, with seconds). */
  cron?: string;
  /** An IANA time zone for `cron` (default `'UTC'`), e.g. `'Europe/Berlin'`. */
  timeZone?: string;
  /** A fixed interval instead of cron, at least 1 s: `'5m'`; occurrences at multiples of it since the epoch. */
  every?: Duration;
  /**
   * Occurrences missed while no instance ran (or while paused): `'skip'`
   * them, run the latest `'one'` (default), or run `'all'` (the latest
   * `catchUpCap`, default 100).
   */
  catchUp?: CatchUp;
  catchUpCap?: number;
  /**
   * An occurrence that comes due while an earlier one is retrying (failed
   * and waiting to run again): `'skip'` it (default: cancelled, saying why)
   * or `'allow'` both to run.
   */
  overlap?: 'allow' | 'skip';
  /** The payload every occurrence's handler gets (default null). */
  payload?: JsonValue;
}

/** `@RecurringTask(name, options)`: the rule, and the handler options of its task type. */
export type RecurringTaskOptions = ScheduleRule & HandlerOptions;

/** A schedule added at run time: the rule and the task type whose handler runs each occurrence. */
export interface ScheduleDefinition extends ScheduleRule {
  /** The task type each occurrence runs as (default: the schedule's name). */
  type?: string;
}

/** One schedule as `DelaySchedules.list()` and the admin API show it. */
export interface ScheduleInfo {
  name: string;
  type: string;
  cron: string | null;
  timeZone: string;
  everyMs: number | null;
  catchUp: CatchUp;
  catchUpCap: number;
  overlap: 'allow' | 'skip';
  paused: boolean;
  /** Declared with @RecurringTask (removed when the code no longer declares it). */
  inCode: boolean;
  /** The next occurrence not yet planned (planned ones are pending tasks); null when the rule has none. */
  nextAt: Date | null;
  /**
   * The next occurrence to come due: the earliest planned one still to come,
   * or else `nextAt`; null while paused or when the rule has none.
   */
  upcomingAt: Date | null;
  /** The latest occurrence planned. */
  lastPlannedAt: Date | null;
  /** Occurrences the catch-up policy dropped, whether planned or not when they were missed. */
  missed: number;
  /** Why its last plan failed (it is set aside and tried again later); null when planning works. */
  planError: string | null;
  /** The latest occurrence that came due, and what became of it. */
  lastOccurrence: {
    at: Date;
    taskId: TaskId;
    state: 'pending' | 'executed' | 'cancelled' | 'dead';
    lastError: string | null;
  } | null;
}
