import { DelayValidationError } from '../errors/delay-validation.error.js';
import { UnknownTaskTypeError } from '../errors/unknown-task-type.error.js';
import type { HandlerRegistry } from '../handler-registry.js';
import { normalizeScheduleRequest, type NormalizedRequest } from './schedule-request.js';
import type { ScheduleRequest } from '../task.types.js';

/**
 * A schedule request checked and normalized (normalizeScheduleRequest), for
 * a type with a handler here unless `allowUnknownTypes`. `prefix` names the
 * request in a field's error, for a bulk call (`requests[3].`).
 */
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
