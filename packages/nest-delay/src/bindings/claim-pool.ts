import pg from 'pg';
import type { LentClient } from './lent-client.js';

/**
 * A pool of one lent connection, the claim's, for `@prisma/adapter-pg`:
 * PrismaPg uses a pool it is given only if it is a `pg.Pool` (of its own
 * copy of pg), sends plain statements to `pool.query` and a `$transaction`
 * to `pool.connect()` (whose BEGIN the lent client refuses). It never opens
 * a connection of its own, and ending it ends nothing: the claim gives its
 * connection back when it commits.
 */
export class ClaimPool extends pg.Pool {
  readonly #client: LentClient & PoolClientEvents;

  constructor(lent: LentClient) {
    // Were this pool taken for a config (PrismaPg on another copy of pg),
    // the pool built from it would connect with this Client: it refuses,
    // rather than run the handler's writes outside the claim's transaction.
    super({ max: 1, Client: NoConnection });
    // PrismaPg listens for errors on the connection it takes; the claim's
    // errors are the engine's to handle, so nothing is added to its client.
    const events: PoolClientEvents = { on: () => this.#client, removeListener: () => this.#client };
    this.#client = Object.assign(lent, events);
  }

  override query(config: any, values?: any): any {
    return this.#client.query(config, values);
  }

  override connect(): any {
    return Promise.resolve(this.#client);
  }

  override end(): Promise<void> {
    return Promise.resolve();
  }
}

interface PoolClientEvents {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  removeListener(event: string, listener: (...args: unknown[]) => void): unknown;
}

class NoConnection extends pg.Client {
  override connect(callback?: (...args: any[]) => void): any {
    const error = new Error(
      "nest-delay/prisma: @prisma/adapter-pg did not take the claim's pool as a pool " +
        '(it loads another copy of pg than nest-delay): dedupe pg, so both import the same',
    );
    if (!callback) return Promise.reject(error);
    process.nextTick(callback, error);
  }
}
