/**
 * The floor under the engine's drain of a backlog (api-under-backlog.ts): the
 * simplest drain that runs each close once, in the transaction that marks
 * its task executed. `concurrency` plain connections, each looping: take up
 * to a batch (the engine's default, 50) of due tasks of FLOOR_TYPE with FOR
 * UPDATE SKIP LOCKED, apply the close-unpaid handler's effect to their
 * orders in a few set-wise statements (close those still unpaid, their
 * CLOSED event, the customer's notification task), mark the tasks executed,
 * COMMIT. No lease, no wheel, no retry: a failure ends the drain. Given a
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
const CLOSE = `UPDATE orders SET status = 'CLOSED', close_reason = 'PAYMENT_TIMEOUT',
  closed_at = now(), payment_deadline = NULL
  WHERE id = ANY($1::uuid[]) AND status = 'PENDING_PAYMENT' RETURNING id`;
const EVENT = `INSERT INTO order_event (order_id, type, actor, data, at)
  SELECT id, 'CLOSED', 'system', '{"reason":"PAYMENT_TIMEOUT"}'::jsonb, now() FROM unnest($1::uuid[]) AS t(id)`;
const NOTIFY = `INSERT INTO delayed_task (type, key, entity, payload, due_at, max_attempts, created_at, updated_at)
  SELECT 'order.notify-closed', 'order:' || id || ':notify-closed', 'order:' || id,
         jsonb_build_object('orderId', id), now(), 5, now(), now()
  FROM unnest($1::uuid[]) AS t(id)`;
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
        const closed = (
          await client.query<{ id: string }>(CLOSE, [rows.map((r) => r.order_id)])
        ).rows.map((r) => r.id);
        await client.query(EVENT, [closed]);
        await client.query(NOTIFY, [closed]);
        await client.query(DONE, [rows.map((r) => r.id)]);
        await client.query('COMMIT');
        await sleep(rows.length === 0 ? 100 : started + periodMs - performance.now());
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
