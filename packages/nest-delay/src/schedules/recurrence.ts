import { Cron } from 'croner';
import { DelayValidationError } from '../errors/delay-errors.js';

/** When a recurring task recurs: a cron expression in a time zone, or a fixed interval. */
export type RecurrenceSpec = { cron: string; timeZone: string } | { everyMs: number };

/**
 * The occurrences of one schedule: croner for cron (DST: a skipped time runs
 * at the first valid time after it, a repeated one once), multiples of the
 * interval since the epoch for `every`. Each is computed from the previous
 * occurrence, never from now, so every instance computes the same instants
 * and a late planner neither skips nor shifts one.
 */
export class Recurrence {
  private readonly cron: Cron | undefined;

  private constructor(readonly spec: RecurrenceSpec) {
    if ('cron' in spec)
      this.cron = new Cron(spec.cron, { timezone: spec.timeZone, paused: true, mode: 'auto' });
  }

  static of(spec: RecurrenceSpec, field = 'schedule'): Recurrence {
    if ('everyMs' in spec) {
      if (!Number.isSafeInteger(spec.everyMs) || spec.everyMs < 1000) {
        throw new DelayValidationError(
          `${field}.every`,
          `must be at least 1 second; got ${spec.everyMs} ms`,
        );
      }
      return new Recurrence(spec);
    }
    if (!isTimeZone(spec.timeZone)) {
      throw new DelayValidationError(
        `${field}.timeZone`,
        `must be an IANA time zone such as 'Europe/Berlin' or 'UTC'; got ${JSON.stringify(spec.timeZone)}`,
      );
    }
    try {
      return new Recurrence(spec);
    } catch (error) {
      throw new DelayValidationError(
        `${field}.cron`,
        `is not a cron expression (${(error as Error).message}); got ${JSON.stringify(spec.cron)}`,
      );
    }
  }

  /** The first occurrence strictly after `afterMs`, or undefined if there is none. */
  next(afterMs: number): number | undefined {
    if ('everyMs' in this.spec) {
      const every = this.spec.everyMs;
      return Math.floor(afterMs / every) * every + every;
    }
    return this.cron!.nextRun(new Date(afterMs))?.getTime();
  }

  /** How it reads in lists and logs: the expression and zone, or the interval. */
  describe(): string {
    return 'cron' in this.spec
      ? `${this.spec.cron} (${this.spec.timeZone})`
      : `every ${this.spec.everyMs} ms`;
  }
}

function isTimeZone(zone: unknown): boolean {
  if (typeof zone !== 'string' || zone.length === 0) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
