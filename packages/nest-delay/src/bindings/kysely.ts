import {
  CompiledQuery,
  Kysely,
  PostgresDialect,
  type KyselyConfig,
  type PostgresPoolClient,
} from 'kysely';
import type { DelayExecutor, TaskContext } from '../task.types.js';
import { lentClient } from './lent-client.js';

/**
 * `nest-delay/kysely`. Schedule in your Kysely transaction:
 * `delay.schedule(request, { transaction: kyselyTransaction(trx) })`.
 */
export function kyselyTransaction(trx: Pick<Kysely<any>, 'executeQuery'>): DelayExecutor {
  return {
    rows: async <T>(text: string, params: unknown[]) =>
      (await trx.executeQuery<T>(CompiledQuery.raw(text, params))).rows as T[],
  };
}

/**
 * A Kysely on the handler's claim transaction: what it writes commits with
 * the task's executed_at, or rolls back with a failed attempt. Pass your
 * plugins (CamelCasePlugin…) as you do to your own Kysely. It is inside a
 * transaction already: `transaction()` on it is refused; `savepoint` works.
 */
export function kyselyOn<DB>(
  ctx: Pick<TaskContext<unknown>, 'client'>,
  config: Omit<KyselyConfig, 'dialect'> = {},
): Kysely<DB> {
  // Kysely sends text and parameters only (no cursor: the dialect is given none).
  const client = lentClient(ctx) as unknown as PostgresPoolClient;
  return new Kysely<DB>({
    ...config,
    dialect: new PostgresDialect({
      pool: { connect: async () => client, end: async () => undefined, options: {} },
    }),
  });
}
