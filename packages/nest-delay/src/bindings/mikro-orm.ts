import {
  Kysely,
  PostgresDialect,
  type DatabaseConnection,
  type Driver,
  type PostgresPoolClient,
  type QueryCompiler,
  type TransactionSettings,
} from 'kysely';
import pg from 'pg';
import type { DelayExecutor, TaskContext } from '../task.types.js';
import { kyselyTransaction } from './kysely.js';
import { lentClient } from './lent-client.js';

/**
 * What this binding needs of MikroORM's EntityManager (`@mikro-orm/postgresql`
 * 7, which runs its SQL through Kysely): its transaction context, and a fork
 * that takes one. Typed structurally, so that the package never imports
 * MikroORM and your own `EntityManager` type comes back from `mikroOrmOn`.
 */
export interface MikroOrmEntityManager<EM> {
  getTransactionContext(): unknown;
  setTransactionContext(ctx: unknown): void;
  fork(options?: { clear?: boolean }): EM;
}

/**
 * `nest-delay/mikro-orm`. Schedule in your MikroORM transaction, with the
 * EntityManager `transactional` hands you:
 * `em.transactional((em) => delay.schedule(request, { transaction: mikroOrmTransaction(em) }))`.
 * The statements run on that transaction's Kysely transaction, so they
 * commit or roll back with it.
 */
export function mikroOrmTransaction(
  em: Pick<MikroOrmEntityManager<unknown>, 'getTransactionContext'>,
): DelayExecutor {
  const trx = em.getTransactionContext() as Pick<Kysely<any>, 'executeQuery'> | undefined;
  if (!trx || typeof trx.executeQuery !== 'function')
    throw new Error(
      'mikroOrmTransaction(em): this EntityManager is not inside a transaction; pass the one ' +
        'em.transactional(async (em) => …) gives its callback (or call em.begin() first)',
    );
  const kysely = kyselyTransaction(trx);
  return {
    rows: async <T>(text: string, params: unknown[]) =>
      timestampsParsed(await kysely.rows<T>(text, params)),
  };
}

/**
 * MikroORM's pool reads date and time columns as the text Postgres sent, and
 * Kysely gives back rows without their columns' types. The engine reads rows
 * as pg parses them (a timestamptz as a Date), and names every timestamp
 * column of its statements `…_at` (no text column so named), so a string in
 * such a column is parsed here with pg's own timestamptz parser.
 */
function timestampsParsed<T>(rows: T[]): T[] {
  for (const row of rows as Record<string, unknown>[])
    for (const [name, value] of Object.entries(row))
      if (typeof value === 'string' && name.endsWith('_at')) row[name] = parseTimestamptz(value);
  return rows;
}

const parseTimestamptz = pg.types.getTypeParser(1184, 'text');

/**
 * A fork of `em` whose transaction is the handler's claim transaction: what
 * it flushes commits with the task's executed_at, or rolls back with a
 * failed attempt. Inside it, `em.transactional()` and `em.begin()` are
 * savepoints of the claim, as MikroORM makes them inside any transaction;
 * they never commit the claim. The fork starts with an empty identity map.
 */
export async function mikroOrmOn<EM extends MikroOrmEntityManager<EM>>(
  ctx: Pick<TaskContext<unknown>, 'client'>,
  em: EM,
): Promise<EM> {
  const client = lentClient(ctx) as unknown as PostgresPoolClient;
  const kysely = new Kysely<any>({ dialect: new InClaimDialect(client) });
  // MikroORM's transaction context is a Kysely transaction: this one begins
  // nothing (the claim's is open) and refuses to end it.
  const trx = await kysely.startTransaction().execute();
  const fork = em.fork({ clear: true });
  fork.setTransactionContext(trx);
  return fork;
}

/** A PostgresDialect on the claim's lent client whose transactions are the claim's own. */
class InClaimDialect extends PostgresDialect {
  constructor(client: PostgresPoolClient) {
    // MikroORM streams through a cursor only when asked; none is given here.
    super({ pool: { connect: async () => client, end: async () => undefined, options: {} } });
  }

  override createDriver(): Driver {
    return new InClaimDriver(super.createDriver());
  }
}

const refused = (what: string) =>
  new Error(
    `"${what}" refused: a handler runs inside its claim's transaction, which the engine commits with the task; ` +
      'em.transactional() inside the handler is a savepoint and may fail alone',
  );

/**
 * Kysely's Postgres driver, except that a transaction is already open: BEGIN
 * is not sent, and COMMIT or ROLLBACK of that outer transaction is refused
 * (only MikroORM's own transactions, its savepoints, end inside a handler).
 */
class InClaimDriver implements Driver {
  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }
  acquireConnection(): Promise<DatabaseConnection> {
    return this.inner.acquireConnection();
  }
  async beginTransaction(
    _connection: DatabaseConnection,
    _settings: TransactionSettings,
  ): Promise<void> {
    // The claim's transaction is open on this connection.
  }
  commitTransaction(): Promise<void> {
    return Promise.reject(refused('COMMIT'));
  }
  rollbackTransaction(): Promise<void> {
    return Promise.reject(refused('ROLLBACK'));
  }
  savepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.inner.savepoint!(connection, name, compile);
  }
  rollbackToSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.inner.rollbackToSavepoint!(connection, name, compile);
  }
  releaseSavepoint(
    connection: DatabaseConnection,
    name: string,
    compile: QueryCompiler['compileQuery'],
  ): Promise<void> {
    return this.inner.releaseSavepoint!(connection, name, compile);
  }
  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(connection);
  }
  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
