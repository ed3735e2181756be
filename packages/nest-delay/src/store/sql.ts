import type { DataSource } from 'typeorm';
import { releasedManager } from '../delay.messages.js';
import type { DelayExecutor } from '../task.types.js';
import { ForeignTransaction, type CallerTransaction } from './caller-transaction.js';
import {
  pgClientOf,
  pgPoolOf,
  PreparedStatements,
  type PgClient,
  type PgResult,
} from './claim-connection.js';

/**
 * Runs one parameterised statement and returns its rows: the public
 * DelayExecutor, by its engine name. A `name` asks for it prepared, where
 * the connection can (a claim's; see PreparedStatements): one name, one
 * text, always.
 */
export type Sql = DelayExecutor;

/**
 * Statements outside a claim (a claim's connection is claim-connection.ts),
 * sent to `pg` directly, through the DataSource's driver. TypeORM's public `query()` returns `[rows, count]` for an UPDATE or DELETE
 * and plain rows otherwise, so every `... RETURNING` statement would need to
 * know its own command tag; `pg` returns `rows` for all of them. The
 * connection is still TypeORM's: a caller's transaction is the one its
 * EntityManager's QueryRunner holds (`connect()` returns that very client),
 * and the pool is the DataSource's (`driver.master`).
 */
export class Database {
  constructor(
    readonly dataSource: DataSource,
    /** Off unless the runtime says otherwise (the module's options). */
    readonly prepared = new PreparedStatements(false),
  ) {}

  /**
   * Gives every connection of the pool an error listener of its own for its
   * whole life. pg-pool takes its listener off a connection while lending it
   * out, and a pg client with no listener turns a session the server ends
   * between two statements (pg_terminate_backend, a failover, a proxy's idle
   * timeout) into an uncaught exception that kills the process; with one, the
   * connection's next statement fails instead, and the pool drops it.
   */
  guardConnections(): void {
    const pool = pgPoolOf(this.dataSource);
    if (!pool || typeof pool.on !== 'function' || GUARDED.has(pool)) return;
    GUARDED.add(pool);
    pool.on('connect', guard);
    // Connections opened before this (TypeORM opens one at initialize).
    for (const client of pool._clients ?? []) guard(client);
  }

  /** Statements on a pooled connection, each its own transaction. */
  get pool(): Sql {
    const pool = pgPoolOf(this.dataSource)!;
    return {
      rows: async <T>(text: string, params: unknown[]) =>
        (await pool.query(text, params)).rows as T[],
    };
  }

  /** `work`'s statements in one transaction of their own, committed when it resolves. */
  transaction<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
    return this.dataSource.transaction((manager) => work(this.in(manager)));
  }

  /** Statements in the caller's transaction when it gives one (see CallerTransaction), else on the pool. */
  in(caller: CallerTransaction | undefined): Sql {
    if (caller instanceof ForeignTransaction) return caller.sql;
    const runner = caller?.queryRunner;
    if (!runner) return this.pool;
    return {
      rows: async <T>(text: string, params: unknown[]) => {
        if (runner.isReleased) throw new Error(releasedManager());
        const client = await pgClientOf(runner);
        return ((await client.query(text, params)) as PgResult).rows as T[];
      },
    };
  }
}

const GUARDED = new WeakSet<object>();

/** The server ended the session: the next statement on the connection reports it. */
function ignoreConnectionError(): void {}

function guard(client: PgClient): void {
  if (!client.listeners('error').includes(ignoreConnectionError)) {
    client.on('error', ignoreConnectionError);
  }
}
