/**
 * What the adapter reads from Postgres beside the engine, on a pool of one
 * connection of its own: queue depth, and what the startup descriptor
 * reports. A connection the harness terminates or a restart drops is
 * replaced on the next query.
 */
import pg from 'pg';
import { DEPTH } from '../sample-statements.js';

/** The engine's tables: `delayed_task` and every `delay_*` table its migrations create. */
const ENGINE_TABLES = `
  SELECT schemaname || '.' || tablename AS name FROM pg_tables
  WHERE schemaname = current_schema() AND (tablename = 'delayed_task' OR tablename LIKE 'delay\\_%')
  ORDER BY tablename`;

/** The last engine migration applied (TypeORM's ledger of migrations). */
const LAST_MIGRATION = `SELECT name FROM migrations ORDER BY "timestamp" DESC LIMIT 1`;

export class AdapterQueries {
  private readonly pool: pg.Pool;

  constructor(url: string) {
    this.pool = new pg.Pool({
      connectionString: url,
      max: 1,
      application_name: 'nest-delay-bench-observer',
    });
    // An idle connection ended by the server: the pool drops it and opens another.
    this.pool.on('error', () => {});
  }

  /** Tasks due and not yet run (those running count until their claim commits). */
  async depth(): Promise<number> {
    return (await this.pool.query<{ n: number }>(DEPTH['nest-delay'])).rows[0].n;
  }

  async engineTables(): Promise<string[]> {
    return (await this.pool.query<{ name: string }>(ENGINE_TABLES)).rows.map((r) => r.name);
  }

  async schemaVersion(): Promise<string | null> {
    return (await this.pool.query<{ name: string }>(LAST_MIGRATION)).rows[0]?.name ?? null;
  }

  async end(): Promise<void> {
    await this.pool.end();
  }
}
