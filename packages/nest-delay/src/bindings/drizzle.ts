import { sql, type SQL, type SQLChunk } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { DrizzleConfig } from 'drizzle-orm/utils';
import pg from 'pg';
import type { DelayExecutor, TaskContext } from '../task.types.js';
import { lentClient } from './lent-client.js';

/** What `tx.execute` of a node-postgres drizzle resolves to: pg's result. */
interface PgResult {
  rows: Record<string, unknown>[];
  fields?: { name: string; dataTypeID: number }[];
}

/**
 * `nest-delay/drizzle` (the node-postgres driver). Schedule in your drizzle
 * transaction: `delay.schedule(request, { transaction: drizzleTransaction(tx) })`.
 * Values are bound as parameters, never spliced into the text.
 */
export function drizzleTransaction(tx: {
  execute(query: SQL): PromiseLike<unknown>;
}): DelayExecutor {
  return {
    rows: async <T>(text: string, params: unknown[]) =>
      asPgParses((await tx.execute(bound(text, params))) as PgResult) as T[],
  };
}

/**
 * A drizzle database on the handler's claim transaction: what it writes
 * commits with the task's executed_at, or rolls back with a failed attempt.
 * Pass your `schema` (and `casing`…) as you do to your own `drizzle()`. It
 * is inside a transaction already: `transaction()` on it is refused.
 */
export function drizzleOn<TSchema extends Record<string, unknown> = Record<string, never>>(
  ctx: Pick<TaskContext<unknown>, 'client'>,
  config: DrizzleConfig<TSchema> = {},
): NodePgDatabase<TSchema> {
  return drizzle<TSchema, pg.PoolClient>({
    ...config,
    client: lentClient(ctx) as unknown as pg.PoolClient,
  });
}

/**
 * `text` with its `$n` as drizzle parameters. Drizzle numbers its
 * parameters in order of appearance, so a `$n` used twice is bound twice.
 */
function bound(text: string, params: unknown[]): SQL {
  const chunks: SQLChunk[] = [];
  let from = 0;
  for (const match of text.matchAll(/\$(\d+)/g)) {
    chunks.push(sql.raw(text.slice(from, match.index)), sql.param(params[Number(match[1]) - 1]));
    from = match.index + match[0].length;
  }
  chunks.push(sql.raw(text.slice(from)));
  return sql.join(chunks);
}

/**
 * Drizzle asks pg for dates, timestamps, intervals and their arrays as the
 * text Postgres sent; the engine reads rows as pg parses them (a timestamptz
 * as a Date), so those columns are parsed here with pg's own parsers.
 */
function asPgParses({ rows, fields = [] }: PgResult): Record<string, unknown>[] {
  const parsed = fields.filter((field) => RAW_IN_DRIZZLE.has(field.dataTypeID));
  for (const row of rows)
    for (const { name, dataTypeID } of parsed) {
      const value = row[name];
      if (typeof value === 'string') row[name] = pg.types.getTypeParser(dataTypeID, 'text')(value);
    }
  return rows;
}

/** timestamptz, timestamp, date, interval and their arrays (drizzle-orm/node-postgres session). */
const RAW_IN_DRIZZLE = new Set([1184, 1114, 1082, 1186, 1185, 1115, 1182, 1187, 1231]);
