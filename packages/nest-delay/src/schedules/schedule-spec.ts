import { checkText, DelayValidationError } from '../errors/delay-errors.js';
import { parseDuration } from '../duration.js';
import type { ScheduleSpec } from './schedule-statements.js';
import { Recurrence } from './recurrence.js';
import type { ScheduleDefinition } from './schedule.types.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
const CATCH_UP = ['skip', 'one', 'all'] as const;
const OVERLAP = ['allow', 'skip'] as const;

/** A definition checked (errors name the field) and filled with defaults. */
export function resolveSchedule(
  name: string,
  definition: ScheduleDefinition,
  inCode: boolean,
  where = `schedule ${JSON.stringify(name)}`,
): { spec: ScheduleSpec; recurrence: Recurrence } {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new DelayValidationError(
      'name',
      `must be 1 to 200 letters, digits, '.', '_', ':' or '-', starting with a letter or digit; got ${JSON.stringify(name)}`,
    );
  }
  const d = definition ?? {};
  const field = (key: string) => `${where}.${key}`;
  if ((d.cron === undefined) === (d.every === undefined)) {
    throw new DelayValidationError(field('cron'), 'give either cron or every (one of them)');
  }
  const everyMs = d.every === undefined ? null : parseDuration(d.every, field('every'));
  const timeZone = d.timeZone ?? 'UTC';
  if (everyMs !== null && d.timeZone !== undefined) {
    throw new DelayValidationError(field('timeZone'), 'applies to cron only; every is zone-free');
  }
  const recurrence = Recurrence.of(
    everyMs === null ? { cron: String(d.cron), timeZone } : { everyMs },
    where,
  );
  const catchUp = d.catchUp ?? 'one';
  if (!CATCH_UP.includes(catchUp)) {
    throw new DelayValidationError(
      field('catchUp'),
      `must be one of ${CATCH_UP.join(', ')}; got ${JSON.stringify(catchUp)}`,
    );
  }
  const catchUpCap = d.catchUpCap ?? 100;
  if (!Number.isSafeInteger(catchUpCap) || catchUpCap < 1 || catchUpCap > 10_000) {
    throw new DelayValidationError(
      field('catchUpCap'),
      `must be an integer from 1 to 10,000; got ${String(catchUpCap)}`,
    );
  }
  const overlap = d.overlap ?? 'skip';
  if (!OVERLAP.includes(overlap)) {
    throw new DelayValidationError(
      field('overlap'),
      `must be one of ${OVERLAP.join(', ')}; got ${JSON.stringify(overlap)}`,
    );
  }
  const type = d.type ?? name;
  checkText(type, field('type'), 200, ' (a task type)');
  const payloadJson = JSON.stringify(d.payload ?? null);
  return {
    recurrence,
    spec: {
      name,
      type,
      cron: everyMs === null ? String(d.cron) : null,
      timeZone,
      everyMs,
      payloadJson,
      catchUp,
      catchUpCap,
      overlap,
      inCode,
    },
  };
}

/** The rule of a stored schedule. */
export function recurrenceOf(row: {
  cron: string | null;
  time_zone: string;
  every_ms: string | number | null;
}): Recurrence {
  return row.cron !== null
    ? Recurrence.of({ cron: row.cron, timeZone: row.time_zone })
    : Recurrence.of({ everyMs: Number(row.every_ms) });
}
