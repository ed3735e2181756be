import { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { currentRequest } from './request-context.js';

const logger = new Logger('HTTP');
/** Probes and scrapes come every few seconds: logged at debug, not info. */
const QUIET = /^\/(health|metrics)(\/|$)/;

/** Query parameters whose values never reach a log line (a token sent where it does not belong). */
const SECRET_PARAMS = /^(token|access_token|api_key|apikey|key|password|secret|authorization)$/i;

/** The URL as logged: each secret-looking query parameter's value replaced. */
export function loggedUrl(originalUrl: string): string {
  const at = originalUrl.indexOf('?');
  if (at < 0) return originalUrl;
  const params = new URLSearchParams(originalUrl.slice(at + 1));
  let redacted = false;
  for (const name of [...params.keys()]) {
    if (SECRET_PARAMS.test(name)) {
      params.set(name, 'REDACTED');
      redacted = true;
    }
  }
  return redacted ? `${originalUrl.slice(0, at)}?${params.toString()}` : originalUrl;
}

/**
 * One line per response: method, path (secret query values redacted),
 * status, duration, and the request id (taken when the request came in: the
 * 'finish' callback runs outside the request's async context).
 */
export function accessLog(req: Request, res: Response, next: NextFunction): void {
  const started = performance.now();
  const requestId = currentRequest()?.requestId;
  res.once('finish', () => {
    const line = {
      msg: `${req.method} ${loggedUrl(req.originalUrl)} ${res.statusCode} ${Math.round(performance.now() - started)} ms`,
      requestId,
      status: res.statusCode,
    };
    if (QUIET.test(req.path)) logger.debug(line);
    else logger.log(line);
  });
  next();
}
