import { DelayValidationError } from './errors/delay-validation.error.js';
import type { TaskRef } from './task.types.js';

/** A ref is an id when it is a positive integer (or its digits), otherwise a business key. */
export interface ParsedRef {
  id: string | null;
  key: string | null;
}

export function parseTaskRef(ref: TaskRef): ParsedRef {
  if (typeof ref === 'number') {
    if (!Number.isSafeInteger(ref) || ref < 1) {
      throw new DelayValidationError(
        'idOrKey',
        `must be a positive integer id or a key; got ${String(ref)}`,
      );
    }
    return { id: String(ref), key: null };
  }
  if (typeof ref !== 'string' || ref.length === 0 || ref.length > 500) {
    throw new DelayValidationError(
      'idOrKey',
      `must be a task id or a key of 1 to 500 characters; got ${JSON.stringify(ref)}`,
    );
  }
  if (/^\d+$/.test(ref)) {
    if (ref.length > 18)
      throw new DelayValidationError('idOrKey', `is not a valid task id: ${ref}`);
    return { id: ref, key: null };
  }
  return { id: null, key: ref };
}
