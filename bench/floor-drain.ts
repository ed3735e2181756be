/**
 * The floor under the engine's drain of a backlog (api-under-backlog.ts): the
 * simplest drain that runs each close once, in the transaction that marks
 * its task executed. `concurrency` plain connections, each looping: take up
 * to a batch (the engine's default, 50) of due tasks of FLOOR_TYPE with FOR
 * UPDATE SKIP LOCKED, run the close-unpaid handler's statements for each
 * (lock its order; if still unpaid, close it, append its CLOSED event and
 * schedule the customer's notification), mark the batch executed, COMMIT. No lease, no wheel, no retry: a failure ends the drain. Given a
 * `rate`, each connection starts a batch at most every concurrency × batch
 * / rate seconds: the same work at another drain's pace.
 */
import pg from 'pg';

/** A type the app has no handler for, so that its engine leaves these tasks to the floor. */
export const FLOOR_TYPE = 'bench.floor-close-unpaid';
const BATCH = 50;

const TAKE = `SELECT id, (payload->>'orderId')::uuid AS order_id FROM delayed_task
  WHERE type = $1 AND executed_at IS NULL AND cancelled_at IS NULL AND due_at <= now()
  ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED`;
const LOCK = `SELECT status FROM orders WHERE id = $1 FOR UPDATE`;
const CLOSE = `UPDATE orders SET status = 'CLOSED', close_reason = 'PAYMENT_TIMEOUT',
  closed_at = now(), payment_deadline = NULL WHERE id = $1`;
const EVENT = `INSERT INTO order_event (order_id, type, actor, data, at)
  VALUES ($1, 'CLOSED', 'system', '{"reason":"PAYMENT_TIMEOUT"}'::jsonb, now())`;
const NOTIFY = `INSERT INTO delayed_task (type, key, entity, payload, due_at, max_attempts, created_at, updated_at)
  VALUES ('order.notify-closed', 'order:' || $1::text || ':notify-closed', 'order:' || $1::text,
          jsonb_build_object('orderId', $1::text), now(), 5, now(), now())`;
const DONE = `UPDATE delayed_task SET executed_at = now(), updated_at = now() WHERE id = ANY($1::bigint[])`;

/** Starts the drain; `stop()` lets each connection finish its batch, then closes them. */
export function startFloorDrain(
  url: string,
  concurrency: number,
  rate?: number,
): { stop(): Promise<void> } {
  let stopping = false;
  const periodMs = rate ? (concurrency * BATCH * 1000) / rate : 0;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const loop = async () => {
    const client = new pg.Client({ connectionString: url, application_name: 'bench-floor-drain' });
    await client.connect();
    try {
      while (!stopping) {
        const started = performance.now();
        await client.query('BEGIN');
        const { rows } = await client.query<{ id: string; order_id: string }>(TAKE, [
          FLOOR_TYPE,
          BATCH,
        ]);
        for (const { order_id: id } of rows) {
          const order = await client.query<{ status: string }>(LOCK, [id]);
          if (order.rows[0]?.status !== 'PENDING_PAYMENT') continue;
          for (const statement of [CLOSE, EVENT, NOTIFY]) await client.query(statement, [id]);
        }
        await client.query(DONE, [rows.map((r) => r.id)]);
        await client.query('COMMIT');
        await sleep(rows.length === 0 ? 100 : Math.max(0, started + periodMs - performance.now()));
      }
    } finally {
      await client.end();
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  return {
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}
