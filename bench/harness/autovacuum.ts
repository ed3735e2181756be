/**
 * What the bench does when the server runs with `autovacuum = off` (CI
 * configurations do, to keep test timings steady): a stand-in for one
 * autovacuum worker at PostgreSQL's defaults, for the tables a workload names.
 * Every minute (autovacuum_naptime) it vacuums a table whose dead tuples pass
 * 50 + 20% of its rows (autovacuum_vacuum_threshold, _scale_factor) and
 * analyzes one whose changes pass 50 + 10% (the analyze pair), throttled as
 * autovacuum is (cost delay 2 ms per 200 units). Without it a table whose rows
 * are deleted never gets its space back, and the pruning's true cost, the
 * vacuum that follows it, would be missing from the figures.
 */
import pg from 'pg';
import { round, withClient } from './db.js';
import { sleep } from './progress.js';

const NAPTIME_MS = 60_000;

export interface VacuumRecord {
  table: string;
  what: 'vacuum' | 'analyze' | 'vacuum, analyze';
  /** Seconds since the stand-in started. */
  atSeconds: number;
  seconds: number;
  deadBefore: number;
  /** Stopped with the workload before it finished. */
  cancelled: boolean;
  error?: string;
}

export interface AutovacuumStandIn {
  /** Stops after the statement under way (cancelled if it is a vacuum still running); the vacuums it ran. */
  stop(): Promise<VacuumRecord[]>;
}

export async function serverAutovacuumOn(url: string): Promise<boolean> {
  return withClient(
    url,
    async (c) => (await c.query('SHOW autovacuum')).rows[0].autovacuum === 'on',
  );
}

/** Starts the stand-in on `tables` of the database at `url`, or nothing when the server's own autovacuum is on. */
export async function startAutovacuumStandIn(
  url: string,
  tables: string[],
): Promise<AutovacuumStandIn | null> {
  if (await serverAutovacuumOn(url)) return null;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
  await client.query(`SET vacuum_cost_delay = '2ms'`);
  await client.query('SET vacuum_cost_limit = 200');
  const records: VacuumRecord[] = [];
  const startedMs = Date.now();
  let stopped = false;
  let current: VacuumRecord | undefined;
  // A failure (the database dropped under it) ends the loop quietly; the records say what ran.
  const loop = (async () => {
    while (!stopped) {
      const wakeMs = Date.now() + NAPTIME_MS;
      while (!stopped && Date.now() < wakeMs) await sleep(Math.min(500, wakeMs - Date.now()));
      for (const table of tables) {
        if (stopped) break;
        const { rows } = await client.query(
          `SELECT s.n_dead_tup::float8 AS dead, s.n_mod_since_analyze::float8 AS changed,
                  greatest(c.reltuples, 0)::float8 AS tuples
           FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = $1`,
          [table],
        );
        if (!rows.length || stopped) continue;
        const { dead, changed, tuples } = rows[0];
        const vacuum = dead > 50 + 0.2 * tuples;
        const analyze = changed > 50 + 0.1 * tuples;
        if (!vacuum && !analyze) continue;
        const what = vacuum && analyze ? 'vacuum, analyze' : vacuum ? 'vacuum' : 'analyze';
        const t = Date.now();
        current = {
          table,
          what,
          atSeconds: round((t - startedMs) / 1000),
          seconds: 0,
          deadBefore: dead,
          cancelled: false,
        };
        records.push(current);
        try {
          await client.query(
            vacuum ? `VACUUM ${analyze ? '(ANALYZE) ' : ''}${table}` : `ANALYZE ${table}`,
          );
        } catch (error) {
          current.cancelled = stopped;
          if (!stopped) current.error = error instanceof Error ? error.message : String(error);
        }
        current.seconds = round((Date.now() - t) / 1000, 1);
        current = undefined;
      }
    }
  })().catch(() => undefined);
  return {
    async stop() {
      stopped = true;
      if (current) {
        await withClient(url, (c) => c.query('SELECT pg_cancel_backend($1)', [pid]));
      }
      await loop;
      await client.end().catch(() => undefined);
      return records;
    },
  };
}
