import { DelayValidationError } from '../errors/delay-validation.error.js';
import type { TaskPosition } from './admin-statements.js';
import { checkTaskId } from '../task-ref.js';

const BASE64URL = /^[A-Za-z0-9_-]{1,100}$/;
const DECODED = /^(-?\d{1,18})\.(\d{1,19})$/;

/** Opaque to clients: base64url of `<due time in µs>.<id>`. */
export function encodeTaskCursor(position: TaskPosition): string {
  return Buffer.from(`${position.dueUs}.${position.id}`).toString('base64url');
}

/** The position a cursor from `encodeTaskCursor` names; anything else is a DelayValidationError on `cursor`. */
export function decodeTaskCursor(cursor: unknown): TaskPosition {
  // Buffer.from skips characters that are not base64url, so check them first.
  const match =
    typeof cursor === 'string' && BASE64URL.test(cursor)
      ? DECODED.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
      : null;
  if (!match) {
    throw new DelayValidationError(
      'cursor',
      'is not a cursor this listing returned; start again without it',
    );
  }
  try {
    return { dueUs: match[1], id: checkTaskId(match[2]) };
  } catch {
    throw new DelayValidationError(
      'cursor',
      'is not a cursor this listing returned; start again without it',
    );
  }
}
