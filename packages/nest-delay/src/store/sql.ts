import pg from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { noDatabase, releasedManager } from '../delay.messages.js';
import type { DelayExecutor } from '../task.types.js';
import { ForeignTransaction, type CallerTransaction } from './caller-transaction.js';
import {
  pgClientOf,
  pgPoolOf,
  PreparedStatements,
  type PgClient,
  type PgPool,
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
 * sent to `pg` directly. The engine runs on a pg pool:
 * its own (DelayModule's `connection` option: a pool or a connection
 * string), or the one under the app's TypeORM DataSource (`driver.master`),
 * which TypeORM is then only one binding of: a caller's `{ manager }` is the
 * transaction its QueryRunner holds (`connect()` returns that very client),
 * and a claim runs on a QueryRunner, so that handlers get a manager of it.
 * pg, not TypeORM's `query()`, runs the statements: that returns `[rows,
 * count]` for an UPDATE or DELETE, and every `... RETURNING` would need to
 * know its own command tag.
 */
export class Database {
  private ended = false;

  private constructor(
    private readonly pg: PgPool,
    /** The app's TypeORM DataSource, when the engine runs on its pool. */
    readonly dataSource: DataSource | undefined,
    /** Whether the engine opened `pg` itself, and so ends it (close). */
    private readonly owned: boolean,
    /** Off unless the runtime says otherwise (the module's options). */
    readonly prepared: PreparedStatements,
  ) {}

  /** On the pool of the app's TypeORM DataSource. */
  static onDataSource(dataSource: DataSource, prepared = new PreparedStatements(false)): Database {
    return new Database(pgPoolOf(dataSource)!, dataSource, false, prepared);
  }

  /** On a pg pool of its own: `owned` when the engine opened it and must end it. */
  static onPool(pool: PgPool, owned: boolean, prepared = new PreparedStatements(false)): Database {
    return new Database(pool, undefined, owned, prepared);
  }

  /** How many connections the pool may open (pg's default 10 when it says none). */
  get poolSize(): number {
    if (this.dataSource) {
      const options = this.dataSource.options as { poolSize?: number; extra?: { max?: number } };
      return options.poolSize ?? options.extra?.max ?? 10;
    }
    return this.pg.options?.max ?? 10;
  }

  /** False once the app has closed its DataSource, or the engine its own pool. */
  get isOpen(): boolean {
    return this.dataSource ? this.dataSource.isInitialized : !this.ended;
  }

  /** Ends the pool if the engine opened it (the app's own it leaves to the app). */
  async close(): Promise<void> {
    if (!this.owned || this.ended) return;
    this.ended = true;
    await this.pg.end();
  }

  /**
   * Gives every connection of the pool an error listener of its own for its
   * whole life. pg-pool takes its listener off a connection while lending it
   * out, and a pg client with no listener turns a session the server ends
   * between two statements (pg_terminate_backend, a failover, a proxy's idle
   * timeout) into an uncaught exception that kills the process; with one, the
   * connection's next statement fails instead, and the pool drops it.
   */
  guardConnections(): void {
    const pool = this.pg;
    if (typeof pool.on !== 'function' || GUARDED.has(pool)) return;
    GUARDED.add(pool);
    pool.on('connect', guard);
    // Connections opened before this (TypeORM opens one at initialize).
    for (const client of pool._clients ?? []) guard(client);
  }

  /** Statements on a pooled connection, each its own transaction. */
  get pool(): Sql {
    return clientSql(this.pg);
  }

  /** A connection of the pool, for a transaction driven by hand (a claim's). */
  connect(): Promise<PgClient & { release(destroy?: boolean): void }> {
    return this.pg.connect();
  }

  /**
   * `work`'s statements in one transaction of their own, committed when it
   * resolves; `manager` is TypeORM's for it when the engine runs on a DataSource.
   */
  async transaction<T>(
    work: (sql: Sql, parts: { client: PgClient; manager?: EntityManager }) => Promise<T>,
  ): Promise<T> {
    if (this.dataSource)
      return this.dataSource.transaction(async (manager) =>
        work(this.in(manager), { client: await pgClientOf(manager.queryRunner!), manager }),
      );
    const client = await this.pg.connect();
    try {
      await client.query('BEGIN', undefined);
      const result = await work(clientSql(client), { client });
      await client.query('COMMIT', undefined);
      return result;
    } catch (error) {
      await client.query('ROLLBACK', undefined).catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
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

/**
 * The engine's connections: a pool of its own from `connection` (a pg Pool,
 * or a connection string it opens one for and so ends), else the app's DataSource's.
 */
export function openDatabase(
  connection: string | object | undefined,
  dataSource: DataSource | null,
  prepared: PreparedStatements,
): Database {
  if (typeof connection === 'string') {
    const pool = new pg.Pool({ connectionString: connection });
    // An idle client the server ended (a restart, a failover, a proxy's idle
    // timeout, a DROP DATABASE) is reported on the pool, which has already
    // let it go; without a listener that report would end the process.
    pool.on('error', ignoreConnectionError);
    return Database.onPool(pool as unknown as PgPool, true, prepared);
  }
  if (connection) return Database.onPool(connection as PgPool, false, prepared);
  if (dataSource) return Database.onDataSource(dataSource, prepared);
  throw new Error(noDatabase());
}

/** Statements on one client, or each on a pooled connection. */
function clientSql(client: Pick<PgClient | PgPool, 'query'>): Sql {
  return {
    rows: async <T>(text: string, params: unknown[]) =>
      ((await client.query(text, params)) as PgResult).rows as T[],
  };
}

const GUARDED = new WeakSet<object>();

/** The server ended the session: the next statement on the connection reports it (or the pool opens another). */
function ignoreConnectionError(): void {}

function guard(client: PgClient): void {
  if (!client.listeners('error').includes(ignoreConnectionError)) {
    client.on('error', ignoreConnectionError);
  }
}
