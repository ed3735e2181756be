import { InvalidCursorError } from './errors/invalid-cursor.error.js';
import { UUID_PATTERN } from './order-id.js';

/** Where a page of GET /orders ended: listing goes on below this (createdAt, id). */
export interface OrderCursor {
  createdAt: Date;
  id: string;
}

const BASE64URL = /^[A-Za-z0-9_-]{1,200}$/;
const DECODED = /^(\d{1,16})\.(.{36})$/;
const MAX_DATE_MS = 8.64e15;

/** Opaque to clients: base64url of `<createdAt epoch ms>.<id>`. */
export function encodeCursor(cursor: OrderCursor): string {
  return Buffer.from(`${cursor.createdAt.getTime()}.${cursor.id}`).toString('base64url');
}

export function decodeCursor(raw: string): OrderCursor {
  // Buffer.from skips characters that are not base64url, so check them first.
  const match = BASE64URL.test(raw)
    ? DECODED.exec(Buffer.from(raw, 'base64url').toString('utf8'))
    : null;
  const ms = match ? Number(match[1]) : NaN;
  if (!match || !(ms <= MAX_DATE_MS) || !UUID_PATTERN.test(match[2]))
    throw new InvalidCursorError();
  return { createdAt: new Date(ms), id: match[2].toLowerCase() };
}
