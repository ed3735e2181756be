import { DelayValidationError } from './errors/delay-errors.js';
import type { TaskId, TaskRef } from './task.types.js';

/** Largest bigserial: ids are compared as digits, never through a float. */
const MAX_ID = 9223372036854775807n;

/** `{ id }` or `{ key }`, checked; throws DelayValidationError naming the field. */
export function checkTaskRef(ref: TaskRef): TaskRef {
  if (ref === null || typeof ref !== 'object') {
    throw new DelayValidationError('ref', `must be { id } or { key }; got ${JSON.stringify(ref)}`);
  }
  const hasId = 'id' in ref && ref.id !== undefined;
  const hasKey = 'key' in ref && ref.key !== undefined;
  if (hasId === hasKey) {
    throw new DelayValidationError(
      'ref',
      `must have exactly one of id and key; got ${JSON.stringify(ref)}`,
    );
  }
  if (hasId) return { id: checkTaskId((ref as { id: TaskId }).id) };
  const key = (ref as { key: unknown }).key;
  if (typeof key !== 'string' || key.length < 1 || key.length > 500) {
    throw new DelayValidationError(
      'ref.key',
      `must be a string of 1 to 500 characters; got ${JSON.stringify(key)}`,
    );
  }
  return { key };
}

/** A task id as the database writes it: decimal digits of a positive bigint. */
export function checkTaskId(id: unknown): TaskId {
  if (typeof id !== 'string' || !/^[1-9]\d{0,18}$/.test(id) || BigInt(id) > MAX_ID) {
    throw new DelayValidationError(
      'ref.id',
      `must be a task id (a positive integer as a string, as the API returns it); got ${JSON.stringify(id)}`,
    );
  }
  return id;
}

/** Ids are decimal digits of bigints (no leading zeros): a shorter one is smaller. */
export function compareIds(a: TaskId, b: TaskId): number {
  return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
}
