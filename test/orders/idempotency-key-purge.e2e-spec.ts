import { PURGE_IDEMPOTENCY_KEYS_SCHEDULE } from '../../src/orders/idempotency-keys.js';
import type { TestApp } from '../support/app-factory.js';
import { HOUR, MINUTE, OrdersApi, useOrdersApp } from './orders-api.js';

const app = useOrdersApp();
let t: TestApp;
let api: OrdersApi;
beforeAll(() => {
  ({ t, api } = app);
});

/** POST /orders with the key, as the body's user. */
const create = (key: string, body: Record<string, unknown>) =>
  api.as(String(body.userId)).post('/orders').set('Idempotency-Key', key).send(body);

const keys = async () =>
  (await api.query<{ key: string }>(`SELECT key FROM user_idempotency_key ORDER BY key`)).map(
    (row) => row.key,
  );

const purges = () =>
  api.query<{ state: string; n: number }>(
    `SELECT CASE WHEN executed_at IS NOT NULL THEN 'executed' WHEN cancelled_at IS NOT NULL THEN 'cancelled'
                 WHEN dead_at IS NOT NULL THEN 'dead' ELSE 'pending' END AS state, count(*)::int AS n
     FROM delayed_task WHERE schedule_name = $1 AND due_at <= $2 GROUP BY 1 ORDER BY 1`,
    [PURGE_IDEMPOTENCY_KEYS_SCHEDULE, new Date(t.clock.now())],
  );

describe('the purge of Idempotency-Keys older than 24 hours', () => {
  it('deletes keys past 24 hours every 10 minutes and keeps younger ones, which still replay', async () => {
    const body = { userId: 'purge-user', amountCents: 500 };
    const old = await create('purge-old', body).expect(201);
    await api.advance(20 * HOUR);
    const young = await create('purge-young', body).expect(201);
    await api.advance(4 * HOUR + 10 * MINUTE);

    expect(await keys()).toEqual(['purge-young']);
    // From 00:00 to 24:10 at one every 10 minutes, both ends included: each ran once.
    expect(await purges()).toEqual([{ state: 'executed', n: 146 }]);

    const replay = await create('purge-young', body).expect(201);
    expect(replay.body.id).toBe(young.body.id);
    const anew = await create('purge-old', body).expect(201);
    expect(anew.body.id).not.toBe(old.body.id);
    expect(await keys()).toEqual(['purge-old', 'purge-young']);
  });

  it('a key 24 hours old creates a new order, purged or not', async () => {
    const body = { userId: 'purge-user', amountCents: 600 };
    const first = await create('purge-expiring', body).expect(201);
    await api.advance(24 * HOUR);
    // Expired whether or not the purge got to it first.
    const again = await create('purge-expiring', { ...body, amountCents: 601 }).expect(201);
    expect(again.body.id).not.toBe(first.body.id);
    expect(again.body.amountCents).toBe(601);
  });

  it('deletes at most 10,000 keys per run; the next run continues', async () => {
    const order = await api.createOrder({ userId: 'purge-bulk', amountCents: 1 });
    const createdAt = new Date(t.clock.now() - 25 * HOUR);
    await api.query(
      `INSERT INTO user_idempotency_key (user_id, key, request_hash, order_id, created_at)
       SELECT 'purge-bulk', 'bulk-' || i, 'h', $1, $2 FROM generate_series(1, 10500) AS i`,
      [order.id, createdAt],
    );
    const bulk = async () =>
      (
        await api.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM user_idempotency_key WHERE key LIKE 'bulk-%'`,
        )
      )[0].n;
    const next = 10 * MINUTE - (t.clock.now() % (10 * MINUTE));
    await api.advance(next);
    expect(await bulk()).toBe(500);
    await api.advance(10 * MINUTE);
    expect(await bulk()).toBe(0);
  });
});
