import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { releasedManager } from '../delay.messages.js';

/** Runs one parameterised statement and returns its rows. */
export interface Sql {
  rows<T>(text: string, params: unknown[]): Promise<T[]>;
}

/** What `pg` hands back: the rows of any statement, RETURNING included, and its command tag. */
interface PgClient {
  query(text: string, params: unknown[] | undefined): Promise<{ rows: unknown[]; command: string }>;
  escapeLiteral(value: string): string;
}

/**
 * The one place that talks to `pg` directly, through the DataSource's driver.
 * TypeORM's public `query()` returns `[rows, count]` for an UPDATE or DELETE
 * and plain rows otherwise, so every `... RETURNING` statement would need to
 * know its own command tag; `pg` returns `rows` for all of them. The
 * connection is still TypeORM's: a caller's transaction is the one its
 * EntityManager's QueryRunner holds (`connect()` returns that very client),
 * and the pool is the DataSource's (`driver.master`).
 */
export class Database {
  constructor(readonly dataSource: DataSource) {}

  /**
   * Gives every connection of the pool an error listener of its own for its
   * whole life. pg-pool takes its listener off a connection while lending it
   * out, and a pg client with no listener turns a session the server ends
   * between two statements (pg_terminate_backend, a failover, a proxy's idle
   * timeout) into an uncaught exception that kills the process; with one, the
   * connection's next statement fails instead, and the pool drops it.
   */
  guardConnections(): void {
    const pool = (this.dataSource.driver as unknown as { master?: PgPool }).master;
    if (!pool || typeof pool.on !== 'function' || GUARDED.has(pool)) return;
    GUARDED.add(pool);
    pool.on('connect', guard);
    // Connections opened before this (TypeORM opens one at initialize).
    for (const client of pool._clients ?? []) guard(client);
  }

  /** Statements on a pooled connection, each its own transaction. */
  get pool(): Sql {
    const pool = (this.dataSource.driver as unknown as { master: PgClient }).master;
    return {
      rows: async <T>(text: string, params: unknown[]) =>
        (await pool.query(text, params)).rows as T[],
    };
  }

  /** Statements in the caller's transaction when `manager` has one, else on the pool. */
  in(manager: EntityManager | undefined): Sql {
    const runner = manager?.queryRunner;
    if (!runner) return this.pool;
    return {
      rows: async <T>(text: string, params: unknown[]) => {
        if (runner.isReleased) throw new Error(releasedManager());
        const client = (await runner.connect()) as PgClient;
        return (await client.query(text, params)).rows as T[];
      },
    };
  }
}

interface PgEmitter {
  on(event: 'error', listener: (error: Error) => void): void;
  listeners(event: 'error'): unknown[];
}

interface PgPool {
  on(event: 'connect', listener: (client: PgEmitter) => void): void;
  /** pg-pool's own list of its connections (not public, but there since pg-pool 2). */
  _clients?: PgEmitter[];
}

const GUARDED = new WeakSet<object>();

/** The server ended the session: the next statement on the connection reports it. */
function ignoreConnectionError(): void {}

function guard(client: PgEmitter): void {
  if (!client.listeners('error').includes(ignoreConnectionError)) {
    client.on('error', ignoreConnectionError);
  }
}

/** A pooled connection for one claim transaction at a time. */
export interface ClaimConnection {
  /** TypeORM's runner on this connection: its manager is what handlers write through. */
  readonly runner: QueryRunner;
  /** Statements on this connection, skipping TypeORM's per-query bookkeeping on the hot path. */
  readonly sql: Sql;
  /**
   * Commits the runner's transaction, as TypeORM's commitTransaction does
   * (its events included), and says whether Postgres did: COMMIT on a
   * transaction that a statement left aborted rolls it back instead, and the
   * reply says ROLLBACK. Reading that reply saves the claim a round trip
   * that would otherwise ask first.
   */
  commit(): Promise<boolean>;
  /**
   * Sends `script` (statements without parameters, their values quoted in)
   * and a BEGIN after it, in one round trip, and leaves the runner inside
   * that transaction as startTransaction would (its events included).
   * Returns the rows of each statement, BEGIN's last.
   */
  beginAfter(script: string): Promise<unknown[][]>;
  /** `value` as a SQL string literal, quoted by pg. */
  literal(value: string): string;
  /**
   * Destroys the connection now, whatever it is doing: the server rolls its
   * transaction back, exactly as a crash would. For handlers that will not return.
   */
  cutOff(): void;
  release(): Promise<void>;
}

export async function claimConnection(database: Database): Promise<ClaimConnection> {
  const runner = database.dataSource.createQueryRunner();
  // connect() resolves to the pool's client (pg.PoolClient), the one the runner uses.
  const client = (await runner.connect()) as PgClient & { end(): Promise<void> };
  return {
    runner,
    sql: {
      rows: async <T>(text: string, params: unknown[]) =>
        (await client.query(text, params)).rows as T[],
    },
    async commit() {
      await runner.broadcaster.broadcast('BeforeTransactionCommit');
      const { command } = await client.query('COMMIT', undefined);
      // The runner's books, as its commitTransaction or rollbackTransaction leaves them.
      const books = runner as unknown as { isTransactionActive: boolean; transactionDepth: number };
      books.isTransactionActive = false;
      books.transactionDepth = 0;
      const committed = command === 'COMMIT';
      await runner.broadcaster.broadcast(
        committed ? 'AfterTransactionCommit' : 'AfterTransactionRollback',
      );
      return committed;
    },
    async beginAfter(script) {
      // The runner's books, as its startTransaction leaves them.
      const books = runner as unknown as { isTransactionActive: boolean; transactionDepth: number };
      books.isTransactionActive = true;
      await runner.broadcaster.broadcast('BeforeTransactionStart');
      let results: Array<{ rows: unknown[] }>;
      try {
        const reply = await client.query(`${script}; BEGIN`, undefined);
        // pg answers a script of several statements with one result each.
        results = Array.isArray(reply) ? reply : [reply];
      } catch (error) {
        books.isTransactionActive = false;
        throw error;
      }
      books.transactionDepth = 1;
      await runner.broadcaster.broadcast('AfterTransactionStart');
      return results.map((result) => result.rows);
    },
    literal: (value) => client.escapeLiteral(value),
    cutOff() {
      if (runner.isReleased) return;
      // Closing the client ends the server session (its transaction rolls
      // back) and fails whatever query is in flight; released while closing,
      // the pool drops it instead of handing it out again. The runner's own
      // release keeps TypeORM's books straight (a pool-level release behind
      // its back would leave it waiting for this runner at destroy, forever).
      client.end().catch(() => undefined);
      void runner.release().catch(() => undefined);
    },
    async release() {
      await runner.release().catch(() => undefined);
    },
  };
}
