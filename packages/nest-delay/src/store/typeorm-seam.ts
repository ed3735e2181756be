import type { DataSource, QueryRunner } from 'typeorm';

/**
 * Everything nest-delay relies on in TypeORM and `pg` beyond their public
 * API, in one place. `typeorm-seam.e2e-spec.ts` (test/delay) checks each
 * against the installed versions and fails, naming the assumption, the day
 * an upgrade changes one.
 *
 * Why it reaches past the public API: the claim sends BEGIN with its attempt
 * note, and COMMIT with the note's unlock, each in one round trip (a claim
 * of one task would otherwise pay two more), so it drives the transaction
 * itself and then leaves the runner's books as TypeORM's own
 * startTransaction / commitTransaction would, events included, so that
 * handlers writing through the runner's manager, and subscribers such as
 * AfterCommit, see an ordinary TypeORM transaction.
 */

/** What `pg` hands back: the rows of any statement, RETURNING included, and its command tag. */
export interface PgClient {
  query(text: string, params: unknown[] | undefined): Promise<PgResult | PgResult[]>;
  /** A named statement: parsed once on this connection, then bound and run. */
  query(config: { name: string; text: string; values: unknown[] }): Promise<PgResult>;
  escapeLiteral(value: string): string;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): void;
  listeners(event: 'error'): unknown[];
}

export interface PgResult {
  rows: unknown[];
  command: string;
}

/** A pg Pool: the engine's own, or TypeORM's postgres driver's (`driver.master`). */
export interface PgPool {
  query(text: string, params: unknown[] | undefined): Promise<PgResult>;
  connect(): Promise<PgClient & { release(destroy?: boolean): void }>;
  end(): Promise<void>;
  readonly options?: { max?: number };
  on(event: 'connect', listener: (client: PgClient) => void): void;
  /** pg-pool's own list of its connections (not public, but there since pg-pool 2). */
  _clients?: PgClient[];
}

/** TypeORM's transaction events, as QueryRunner.broadcaster names them. */
export type TransactionEvent =
  | 'BeforeTransactionStart'
  | 'AfterTransactionStart'
  | 'BeforeTransactionCommit'
  | 'AfterTransactionCommit'
  | 'BeforeTransactionRollback'
  | 'AfterTransactionRollback';

/** The fields TypeORM's own transaction methods keep (`transactionDepth` is protected). */
interface Books {
  isTransactionActive: boolean;
  transactionDepth: number;
}

/** The pg pool behind a postgres DataSource. */
export function pgPoolOf(dataSource: DataSource): PgPool | undefined {
  return (dataSource.driver as unknown as { master?: PgPool }).master;
}

/** The pg client a runner runs on: `connect()` resolves to the pool's client it took. */
export async function pgClientOf(runner: QueryRunner): Promise<PgClient> {
  return (await runner.connect()) as PgClient;
}

/** How deep the runner's transaction nests: 1 for the outer one, one more per savepoint. */
export function transactionDepth(runner: QueryRunner): number {
  return (runner as unknown as Books).transactionDepth;
}

/** Sets the runner's books as its own start/commit/rollback would leave them. */
export function setTransactionBooks(runner: QueryRunner, active: boolean, depth: number): void {
  const books = runner as unknown as Books;
  books.isTransactionActive = active;
  books.transactionDepth = depth;
}

/** Tells the DataSource's subscribers what TypeORM's own transaction methods would. */
export function broadcast(runner: QueryRunner, event: TransactionEvent): Promise<void> {
  return runner.broadcaster.broadcast(event);
}
