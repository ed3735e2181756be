import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { Metrics } from './metrics.js';

/**
 * Counts and times every response by method, route template and status. The
 * route is the matched template (`/orders/:id`), never the raw path, so a
 * scan of random URLs cannot grow the label set: unmatched ones share one.
 */
@Injectable()
export class HttpMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: Metrics) {}

  use(req: Request, res: Response, next: NextFunction): void {
    const started = performance.now();
    res.once('finish', () => {
      const route = (req.route as { path?: string } | undefined)?.path;
      const labels = {
        method: req.method,
        route: route === undefined ? 'unmatched' : `${req.baseUrl}${route}`,
        status: String(res.statusCode),
      };
      this.metrics.httpRequests.inc(labels);
      this.metrics.httpDuration.observe(labels, (performance.now() - started) / 1000);
    });
    next();
  }
}
