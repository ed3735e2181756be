import { AsyncLocalStorage } from 'node:async_hooks';

/** What every line logged while serving one request carries. */
export interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** The request being served, seen from anywhere below its middleware; undefined outside one. */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}
