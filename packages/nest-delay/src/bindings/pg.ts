import type { ClaimClient, DelayExecutor } from '../task.types.js';

/**
 * `nest-delay/pg`: a node-pg client inside your BEGIN as the `transaction`
 * of DelayService's writes. A handler has its claim's client already:
 * `context.client` (a write through it commits with executed_at).
 *
 * ```ts
 * const client = await pool.connect();
 * await client.query('BEGIN');
 * await delay.schedule(request, { transaction: pgTransaction(client) });
 * await client.query('COMMIT');
 * ```
 */
export function pgTransaction(client: Pick<ClaimClient, 'query'>): DelayExecutor {
  return {
    rows: async <T>(text: string, params: unknown[]) =>
      (await client.query(text, params)).rows as T[],
  };
}
