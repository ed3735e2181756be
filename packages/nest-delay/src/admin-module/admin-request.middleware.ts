import { randomUUID } from 'node:crypto';

// Express's shapes, as far as they are used: its types are not a dependency of the package.
interface HttpRequest {
  headers: Record<string, string | string[] | undefined>;
}
interface HttpResponse {
  setHeader(name: string, value: string): unknown;
}

export const REQUEST_ID_HEADER = 'x-request-id';
/** A caller's request id is kept if it is this plain (it goes into log lines). */
const USABLE_ID = /^[\w.:-]{1,128}$/;

/**
 * For every admin route: the request's id (the caller's X-Request-Id when it
 * is plain enough to log, else a new UUID), put back on the request for the
 * handlers and echoed on the response; and `Cache-Control: no-store`, since
 * admin answers are live and private.
 */
export function adminRequest(req: HttpRequest, res: HttpResponse, next: () => void): void {
  const given = req.headers[REQUEST_ID_HEADER];
  const id = typeof given === 'string' && USABLE_ID.test(given) ? given : randomUUID();
  req.headers[REQUEST_ID_HEADER] = id;
  res.setHeader('X-Request-Id', id);
  res.setHeader('Cache-Control', 'no-store');
  next();
}
