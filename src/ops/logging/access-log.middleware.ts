import { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { currentRequest } from './request-context.js';

const logger = new Logger('HTTP');
/** Probes and scrapes come every few seconds: logged at debug, not info. */
const QUIET = /^\/(health|metrics)(\/|$)/;

/**
 * One line per response: method, path, status, duration, and the request
 * id (taken when the request came in: the 'finish' callback runs outside
 * the request's async context).
 */
export function accessLog(req: Request, res: Response, next: NextFunction): void {
  const started = performance.now();
  const requestId = currentRequest()?.requestId;
  res.once('finish', () => {
    const line = {
      msg: `${req.method} ${req.originalUrl} ${res.statusCode} ${Math.round(performance.now() - started)} ms`,
      requestId,
      status: res.statusCode,
    };
    if (QUIET.test(req.path)) logger.debug(line);
    else logger.log(line);
  });
  next();
}
