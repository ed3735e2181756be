import pg from 'pg';

/**
 * What a migration of the package needs of its connection: TypeORM's
 * QueryRunner is one (so `delayMigrations` go into a DataSource's
 * `migrations` as they are), and `migrateDelaySchema` passes one of its own
 * over a pg client, so that an app on Prisma, Drizzle, Kysely, MikroORM or
 * plain pg needs no TypeORM to get the engine's tables.
 */
export interface MigrationRunner {
  query(text: string, params?: unknown[]): Promise<unknown>;
  /** True inside the migration's transaction (table-locks.ts takes its locks only there). */
  readonly isTransactionActive: boolean;
}

/** A migration of the package: recorded under `name` (its class name) once it ran. */
export interface DelayMigration {
  name?: string;
  up(runner: MigrationRunner): Promise<void>;
  down(runner: MigrationRunner): Promise<void>;
}

export interface MigrateOptions {
  /** The table that records which migrations ran (TypeORM's layout). Default `delay_migrations`. */
  table?: string;
}

/**
 * Only one migrator at a time on a database (instances booting together each
 * call migrateDelaySchema): a transaction advisory lock, taken in each
 * migration's transaction, so that it ends with it, even behind a pooler in
 * transaction mode (a session lock could stay on another server session).
 */
const MIGRATOR_LOCK = `SELECT pg_advisory_xact_lock(hashtext('nest-delay migrations'))`;

/**
 * Brings the engine's tables to this version of the package: runs each of
 * `migrations` not yet recorded in `options.table`, oldest first, each in a
 * transaction of its own with its record, and returns the names it ran.
 * Takes a pg Pool (or anything with pg's `connect()`) or a connection string.
 * Safe to call at every boot and from several instances at once: each
 * migration is checked against the record under the lock, in its transaction.
 */
export async function runMigrations(
  database: string | Pick<pg.Pool, 'connect'>,
  migrations: Array<new () => DelayMigration>,
  options: MigrateOptions = {},
): Promise<string[]> {
  const table = options.table ?? 'delay_migrations';
  if (!/^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/.test(table))
    throw new Error(`migrateDelaySchema: table must be a plain lower-case name, got "${table}"`);
  const own =
    typeof database === 'string' ? new pg.Pool({ connectionString: database, max: 1 }) : undefined;
  const client = await (own ?? (database as Pick<pg.Pool, 'connect'>)).connect();
  const ran: string[] = [];
  let inTransaction = false;
  const runner: MigrationRunner = {
    query: async (text, params) => (await client.query(text, params)).rows,
    get isTransactionActive() {
      return inTransaction;
    },
  };
  /** `work` in a transaction holding the migrator's lock. */
  const locked = async (work: () => Promise<void>) => {
    await client.query('BEGIN');
    inTransaction = true;
    try {
      await client.query(MIGRATOR_LOCK);
      await work();
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      inTransaction = false;
    }
  };
  try {
    await locked(async () => {
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${table} (id serial PRIMARY KEY, "timestamp" bigint NOT NULL, name varchar NOT NULL)`,
      );
    });
    for (const Migration of migrations) {
      const migration = new Migration();
      const name = migration.name ?? Migration.name;
      try {
        await locked(async () => {
          const done = await client.query(`SELECT 1 FROM ${table} WHERE name = $1`, [name]);
          if (done.rowCount) return;
          await migration.up(runner);
          await client.query(`INSERT INTO ${table} ("timestamp", name) VALUES ($1, $2)`, [
            Number(/\d{13}$/.exec(name)?.[0] ?? Date.now()),
            name,
          ]);
          ran.push(name);
        });
      } catch (error) {
        throw new Error(`nest-delay migration ${name} failed: ${(error as Error).message}`, {
          cause: error,
        });
      }
    }
    return ran;
  } finally {
    client.release();
    await own?.end();
  }
}
