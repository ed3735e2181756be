import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { runInRequest } from './request-context.js';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/**
 * A caller's id is kept if it looks like one (a proxy's or a client's, so
 * lines join up across services); anything else, or none, gets a fresh UUID.
 * Bounded and plain, so a header cannot inject text into log lines.
 */
const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id, echoes it in the response's X-Request-Id, and
 * serves the request inside its context, so every line logged meanwhile
 * (handlers, services, the exception filter) carries it.
 */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const given = req.get(REQUEST_ID_HEADER);
  const id = given !== undefined && ACCEPTABLE.test(given) ? given : randomUUID();
  // Put back on the request too, so later middleware (the admin API's) reads the same id.
  req.headers['x-request-id'] = id;
  res.setHeader(REQUEST_ID_HEADER, id);
  runInRequest({ requestId: id }, next);
}
