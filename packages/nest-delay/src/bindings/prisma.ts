import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import type { DelayExecutor, TaskContext } from '../task.types.js';
import { lentClient, type LentClient } from './lent-client.js';

/** What the engine needs of a Prisma transaction client (`prisma.$transaction(async (tx) => …)`). */
export interface PrismaRawQueries {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): PromiseLike<T>;
}

/**
 * `nest-delay/prisma` (Prisma 7, `@prisma/adapter-pg`). Schedule in your
 * interactive transaction:
 * `delay.schedule(request, { transaction: prismaTransaction(tx) })`.
 * Values are bound as parameters, never spliced into the text.
 */
export function prismaTransaction(tx: PrismaRawQueries): DelayExecutor {
  return {
    rows: async <T>(text: string, params: unknown[]) =>
      ((await tx.$queryRawUnsafe<Record<string, unknown>[]>(text, ...params)) as unknown[]).map(
        asPgReads,
      ) as T[],
  };
}

/**
 * A Prisma client on the handler's claim transaction: what it writes commits
 * with the task's executed_at, or rolls back with a failed attempt. Give it
 * how to build your client on an adapter, as you build your own:
 * `prismaOn(context, (adapter) => new PrismaClient({ adapter }))`. It is
 * inside a transaction already: `$transaction` on it is refused.
 */
export function prismaOn<Client>(
  ctx: Pick<TaskContext<unknown>, 'client'>,
  create: (adapter: PrismaPg) => Client,
): Client {
  return create(new PrismaPg(new ClaimPool(lentClient(ctx))));
}

/**
 * A pool of one lent connection, the claim's: PrismaPg uses a pool it is
 * given only if it is a `pg.Pool`, sends plain statements to `pool.query`
 * and a `$transaction` to `pool.connect()` (whose BEGIN the lent client
 * refuses). It never opens a connection of its own, and ending it ends
 * nothing: the claim gives its connection back when it commits.
 */
class ClaimPool extends pg.Pool {
  readonly #client: LentClient & PoolClientEvents;

  constructor(lent: LentClient) {
    super({ max: 1 });
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

/**
 * A row of Prisma's raw query as node-pg reads it, as the engine expects:
 * Prisma gives bigint columns (ids, counts) as BigInt where pg gives their
 * text; the other types the engine's statements return (timestamptz, text,
 * int, float8, boolean, jsonb and their arrays) read as pg's already.
 */
function asPgReads(row: unknown): Record<string, unknown> {
  const read: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row as Record<string, unknown>))
    read[name] = pgValue(value);
  return read;
}

function pgValue(value: unknown): unknown {
  if (typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return value.map(pgValue);
  return value;
}
