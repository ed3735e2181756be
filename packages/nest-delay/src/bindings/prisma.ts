import { PrismaPg } from '@prisma/adapter-pg';
import type { DelayExecutor, TaskContext } from '../task.types.js';
import { ClaimPool } from './claim-pool.js';
import { lentClient } from './lent-client.js';

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
