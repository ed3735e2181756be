/**
 * The floor: the least an engine can do on this machine and still run each
 * effect once, in the transaction that marks its task executed. Each task is
 * a row (one multi-row INSERT per call) and a timer in the process that
 * scheduled it; fired ids are claimed at once while one of `workers`
 * connections is free (BEGIN; an UPDATE … RETURNING of those still pending;
 * each handler's ~1 ms of work at once, their ledger rows on the claim's
 * connection; COMMIT), and ids that fire meanwhile go together in the next.
 * No lease, no attempt note, no recovery, no limits or schedules: a task
 * whose process dies never runs, so only the `clean` phase means anything.
 * It is what this machine gives a stream with nothing else in the way: the
 * bar under this project's lateness and CPU, measured in the same run.
 */
import pg from 'pg';
import { INSERT_LEDGER } from './ledger-statements.js';
import { WORK_MS, sleep, type LongSystem, type LongSystemSettings } from './long-system.js';

const CREATE = `CREATE TABLE IF NOT EXISTS floor_task (
  id bigint PRIMARY KEY, due_at timestamptz NOT NULL, executed_at timestamptz)`;
const INSERT = `INSERT INTO floor_task (id, due_at)
  SELECT id, to_timestamp(due::float8 / 1000) FROM unnest($1::bigint[], $2::float8[]) AS t(id, due)`;
const CLAIM = `UPDATE floor_task SET executed_at = now()
  WHERE id = ANY($1::bigint[]) AND executed_at IS NULL RETURNING id`;
/** Ids per claim at most (a backlog's). */
const BATCH_MAX = 100;

export function createFloorSystem(settings: LongSystemSettings): LongSystem {
  const pool = new pg.Pool({
    connectionString: settings.url,
    max: settings.workers + 2,
    application_name: `long-sut-${settings.instance}`,
  });
  pool.on('error', (error) => console.error(`floor: ${error.message}`));
  const due = new Map<number, number>();
  let fired: number[] = [];
  let inFlight = 0;
  let flushing = false;

  const fire = (id: number) => {
    const wait = (due.get(id) ?? 0) - Date.now();
    // Node rounds a timer's delay: never start before the due millisecond.
    if (wait > 0) {
      setTimeout(fire, wait, id);
      return;
    }
    fired.push(id);
    if (!flushing) {
      flushing = true;
      // Ids that fire in the same turn of the loop go in one claim.
      setImmediate(flush);
    }
  };

  const flush = () => {
    flushing = false;
    while (fired.length > 0 && inFlight < settings.workers) {
      const ids = fired.slice(0, BATCH_MAX);
      fired = fired.slice(ids.length);
      inFlight++;
      claim(ids)
        .catch((error: Error) => {
          console.error(`floor: claim failed: ${error.message}`);
          // Pending still: fire again.
          setTimeout(() => ids.forEach(fire), 200);
        })
        .finally(() => {
          inFlight--;
          flush();
        });
    }
  };

  const claim = async (ids: number[]) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string }>(CLAIM, [ids]);
      await Promise.all(
        rows.map(async ({ id }) => {
          const started = Date.now();
          await sleep(WORK_MS);
          await client.query(INSERT_LEDGER, [id, due.get(Number(id)), started, settings.instance]);
        }),
      );
      await client.query('COMMIT');
      for (const { id } of rows) due.delete(Number(id));
      client.release();
    } catch (error) {
      client.release(error as Error);
      throw error;
    }
  };

  return {
    async start() {
      await pool.query(CREATE);
    },
    async schedule(tasks) {
      await pool.query(INSERT, [tasks.map((t) => t.id), tasks.map((t) => t.dueMs)]);
      const now = Date.now();
      for (const t of tasks) {
        due.set(t.id, t.dueMs);
        setTimeout(fire, Math.max(0, t.dueMs - now), t.id);
      }
    },
    async stop() {
      while (inFlight > 0) await sleep(10);
      await pool.end();
    },
  };
}
