/**
 * The limit: the effect alone, with nothing deciding what is due. Ten loops
 * over one pool of ten take ids 1..count in turn, either one autocommit
 * UPDATE per effect (one transaction each) or BEGIN, 50 UPDATEs, COMMIT.
 */
import pg from 'pg';
import { EFFECT_SQL } from '../harness/db.js';

export type BareMode = 'one-per-transaction' | 'batch-50';

export async function runBare(
  url: string,
  mode: BareMode,
  count: number,
  loops: number,
): Promise<{ ms: number }> {
  const pool = new pg.Pool({ connectionString: url, max: loops });
  let next = 1;
  const take = (n: number): number[] => {
    const ids: number[] = [];
    while (ids.length < n && next <= count) ids.push(next++);
    return ids;
  };
  const one = async () => {
    for (let ids = take(1); ids.length > 0; ids = take(1)) await pool.query(EFFECT_SQL, ids);
  };
  const batch = async () => {
    const client = await pool.connect();
    try {
      for (let ids = take(50); ids.length > 0; ids = take(50)) {
        await client.query('BEGIN');
        for (const id of ids) await client.query(EFFECT_SQL, [id]);
        await client.query('COMMIT');
      }
    } finally {
      client.release();
    }
  };
  // Open every connection first: the clock measures effects, not connecting.
  const warm = await Promise.all(Array.from({ length: loops }, () => pool.connect()));
  for (const client of warm) client.release();
  const started = performance.now();
  await Promise.all(Array.from({ length: loops }, () => (mode === 'batch-50' ? batch() : one())));
  const ms = performance.now() - started;
  await pool.end();
  return { ms };
}
