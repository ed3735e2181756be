import { tryParseDuration, type Duration } from '../duration.js';
import { checkText, DelayValidationError } from '../errors/delay-errors.js';
import { checkEntity, dueAtOf } from './schedule-request.js';

/** Which of an entity's pending tasks an entity action takes: all of them, or only these types. */
export interface EntityScope {
  entity: string;
  /** null: every type. */
  types: string[] | null;
}

/** How an entity's tasks move: each by the same delta from its own due time, or all to one time. */
export type EntityMove = { byMs: number; toMs?: undefined } | { toMs: number; byMs?: undefined };

const MAX_TYPES = 100;

/** Checks an entity action's entity and `types`; errors name the field and what to pass instead. */
export function checkEntityScope(entity: unknown, types: unknown): EntityScope {
  if (entity === undefined) {
    throw new DelayValidationError('entity', "is required: the entity's name, such as 'order:42'");
  }
  checkEntity(entity, 'entity');
  if (types === undefined) return { entity: entity as string, types: null };
  if (!Array.isArray(types) || types.length < 1 || types.length > MAX_TYPES) {
    throw new DelayValidationError(
      'types',
      `must be an array of 1 to ${MAX_TYPES} task types, or left out for every type; got ${JSON.stringify(types) ?? String(types)}`,
    );
  }
  types.forEach((type: unknown, i) => checkText(type, `types[${i}]`, 200, ' (a task type)'));
  return { entity: entity as string, types: [...new Set(types as string[])] };
}

/**
 * `{ by }` (a duration such as '2h', or ms: each task moves later by it) or
 * `{ to }` (a time: every task moves to it); exactly one.
 */
export function checkEntityMove(move: unknown, nowMs: number): EntityMove {
  const { by, to } = (move ?? {}) as { by?: unknown; to?: unknown };
  if ((by === undefined) === (to === undefined)) {
    throw new DelayValidationError(
      'by',
      "or to is required, and only one of them: by moves each task later by a duration such as '2h', to moves them all to one time",
    );
  }
  if (by !== undefined) {
    const byMs = tryParseDuration(by as Duration);
    if (byMs === undefined) {
      throw new DelayValidationError(
        'by',
        `must be a non-negative number of ms or a duration such as '30m' or '48h' (use to for an earlier time); got ${JSON.stringify(by) ?? String(by)}`,
      );
    }
    return { byMs };
  }
  try {
    return { toMs: dueAtOf({ runAt: to }, nowMs) };
  } catch (error) {
    if (!(error instanceof DelayValidationError)) throw error;
    throw new DelayValidationError('to', error.message.slice(error.field.length + 1));
  }
}
