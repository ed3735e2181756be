import { tryParseDuration, type Duration } from '../duration.js';
import { checkText, DelayValidationError, UnknownTaskTypeError } from '../errors/delay-errors.js';
import type { HandlerRegistry } from '../handler-registry.js';
import type { ScheduleRequest } from '../task.types.js';

/** A ScheduleRequest checked and reduced to what the INSERT needs. */
export interface NormalizedRequest {
  type: string;
  key: string | null;
  entity: string | null;
  payloadJson: string;
  dueAtMs: number;
  maxAttempts: number;
  ifExists: 'keep' | 'replace' | 'debounce';
  /** With `debounce`: the longest a key's task waits after its first request; else null. */
  maxWaitMs: number | null;
}

const MAX_JSON_DEPTH = 100;
const LATEST_DUE_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Only what survives a round trip through jsonb; anything else is an error, not a silent change. */
function assertJson(value: unknown, path: string, depth = 0): void {
  if (depth > MAX_JSON_DEPTH) throw new DelayValidationError(path, 'is nested too deeply for JSON');
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value))
      throw new DelayValidationError(path, `must be JSON; ${value} is not a JSON number`);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => assertJson(item, `${path}[${i}]`, depth + 1));
    return;
  }
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      throw new DelayValidationError(
        path,
        `must be JSON; a ${value.constructor?.name ?? 'class instance'} is not a plain object`,
      );
    }
    for (const [k, v] of Object.entries(value)) assertJson(v, `${path}.${k}`, depth + 1);
    return;
  }
  throw new DelayValidationError(path, `must be JSON; a ${typeof value} is not`);
}

/** When a request (or a reschedule's `{ delay }` / `{ runAt }`) is due, in epoch ms. */
export function dueAtOf(request: { delay?: unknown; runAt?: unknown }, nowMs: number): number {
  const hasDelay = request.delay !== undefined;
  const hasRunAt = request.runAt !== undefined;
  if (hasDelay === hasRunAt) {
    throw new DelayValidationError('delay', 'or runAt is required, and only one of them');
  }
  if (hasDelay) {
    const ms = tryParseDuration(request.delay as Duration);
    if (ms === undefined) {
      throw new DelayValidationError(
        'delay',
        `must be a non-negative finite number of ms or a duration such as '30m' or '48h'; got ${JSON.stringify(request.delay) ?? String(request.delay)}`,
      );
    }
    if (nowMs + ms > LATEST_DUE_MS) {
      throw new DelayValidationError(
        'delay',
        `puts the task after the year 9999; got ${String(request.delay)}`,
      );
    }
    return nowMs + ms;
  }
  const runAt = request.runAt;
  const ms =
    runAt instanceof Date
      ? runAt.getTime()
      : typeof runAt === 'number'
        ? runAt
        : typeof runAt === 'string'
          ? Date.parse(runAt)
          : NaN;
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) {
    throw new DelayValidationError('runAt', `must be a valid date; got ${String(runAt)}`);
  }
  // Postgres stores far more, but a date outside these years is a bug upstream, not a plan.
  if (ms < 0 || ms > LATEST_DUE_MS) {
    throw new DelayValidationError(
      'runAt',
      `must be between 1970 and 9999; got ${new Date(ms).toISOString()}`,
    );
  }
  return ms;
}

export function normalizeScheduleRequest(
  request: ScheduleRequest<unknown>,
  nowMs: number,
  /** maxAttempts when the request has none: its handler's, else the module's. */
  defaultMaxAttempts: (type: string) => number,
): NormalizedRequest {
  if (request === null || typeof request !== 'object') {
    throw new DelayValidationError('request', 'must be an object with type and delay or runAt');
  }
  const { type, key, entity, ifExists = 'keep', maxWait } = request;
  checkText(type, 'type', 200);
  if (key !== undefined) checkText(key, 'key', 500);
  checkEntity(entity, 'entity');
  if (ifExists !== 'keep' && ifExists !== 'replace' && ifExists !== 'debounce') {
    throw new DelayValidationError(
      'ifExists',
      `must be 'keep', 'replace' or 'debounce'; got ${JSON.stringify(ifExists)}`,
    );
  }
  const maxWaitMs = checkMaxWait(ifExists, maxWait, key);
  const maxAttempts = request.maxAttempts ?? defaultMaxAttempts(type);
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1000) {
    throw new DelayValidationError(
      'maxAttempts',
      `must be an integer from 1 to 1000; got ${String(maxAttempts)}`,
    );
  }
  const payload = request.payload === undefined ? null : request.payload;
  assertJson(payload, 'payload');
  return {
    type,
    key: key ?? null,
    entity: entity ?? null,
    payloadJson: JSON.stringify(payload),
    // A debounced task is due by maxWait at the latest from its first request: this one, if it inserts.
    dueAtMs: Math.min(dueAtOf(request, nowMs), nowMs + (maxWaitMs ?? Infinity)),
    maxAttempts,
    ifExists,
    maxWaitMs,
  };
}

/**
 * An entity names the business object a task belongs to: a string of 1 to
 * 500 characters, as a key (the table's CHECK says the same), conventionally
 * `kind:id` such as `order:42`. Undefined is "none"; anything else is an error
 * naming `field`.
 */
export function checkEntity(entity: unknown, field: string): void {
  if (entity === undefined) return;
  checkText(entity, field, 500, " naming the task's business object, such as 'order:42'");
}

/** `maxWait` goes with `ifExists: 'debounce'` and a key, both ways; in ms, or null without debounce. */
function checkMaxWait(ifExists: string, maxWait: unknown, key: unknown): number | null {
  if (ifExists !== 'debounce') {
    if (maxWait !== undefined) {
      throw new DelayValidationError(
        'maxWait',
        "is only for ifExists: 'debounce'; leave it out, or debounce the key",
      );
    }
    return null;
  }
  if (key === undefined) {
    throw new DelayValidationError(
      'key',
      "is required with ifExists: 'debounce': the key names what is debounced",
    );
  }
  const ms = maxWait === undefined ? undefined : tryParseDuration(maxWait as Duration);
  if (ms === undefined) {
    throw new DelayValidationError(
      'maxWait',
      `is required with ifExists: 'debounce', a non-negative number of ms or a duration such as '1h'; got ${JSON.stringify(maxWait) ?? String(maxWait)}`,
    );
  }
  return ms;
}

/** normalizeScheduleRequest for a type with a handler here (unless `allowUnknownTypes`); `prefix` names a bulk call's request in errors (`requests[3].`). */
export function normalizeRegistered(
  request: ScheduleRequest<unknown>,
  nowMs: number,
  registry: HandlerRegistry,
  allowUnknownTypes: boolean,
  prefix = '',
): NormalizedRequest {
  try {
    const req = normalizeScheduleRequest(request, nowMs, (type) => registry.maxAttemptsOf(type));
    if (!allowUnknownTypes && !registry.has(req.type)) {
      throw new UnknownTaskTypeError(req.type, registry.types());
    }
    return req;
  } catch (error) {
    if (prefix && error instanceof DelayValidationError) {
      throw new DelayValidationError(
        prefix + error.field,
        error.message.slice(error.field.length + 1),
      );
    }
    throw error;
  }
}
